"""The readers' views of documents and media: a notebook's cells and a PDF's text (ReadFile),
a PDF's pages as images and what a media result weighs against the client's limits
(ReadMediaFile)."""
