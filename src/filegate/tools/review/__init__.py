"""The write history read back as changes (SPEC §10 Review and Rewind): the writes since a
point to files inside the caller's workspace (since.py), each file's net change and its diff
within the budget (sections.py), and a rewind's plan (rewind.py). Changes and UndoWrite's
``since`` are the front doors."""
