"""Media fitted to a character budget: ``image`` (Pillow) and ``video`` (PyAV, optional).

A leaf package: bytes or an open file in, encoded bytes out. It imports nothing else from
filegate, knows nothing of MCP, paths or policy; ``tools/read_media.py`` is its only caller.
"""
