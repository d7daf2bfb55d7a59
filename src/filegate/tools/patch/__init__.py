"""ApplyPatch's pure half (SPEC §10): a set of file changes as one plan, text in and plan out.

- :mod:`.plan` — the plan (one :class:`~.plan.FileChange` per file) and the ``changes`` list
  compiled to it;
- :mod:`.v4a` — Codex's ``*** Begin Patch`` envelope (V4A) parsed and compiled to the same plan;
- :mod:`.hunks` — a file's planned edits applied to its text: StrReplaceFile's edits (ladder,
  codec, line endings), narrowed by a V4A hunk's ``@@`` lines and ``*** End of File`` where its
  text alone is in the file more than once.

No I/O here: the tool (tools/apply_patch.py) gates the plan's paths, reads the files, asks once
and commits the set through fsio/.
"""
