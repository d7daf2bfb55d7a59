"""The edit machinery behind WriteFile, StrReplaceFile and UndoWrite: the one write route
(writing), the matching ladder and its StrReplaceFile side (matching, tolerant_edit), edits in a
notebook's cells, placeholders in an overwrite, a new file's text style, and the diffs a
question shows."""
