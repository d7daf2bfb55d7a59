"""Media fitted to a character budget: ``image`` (Pillow) and ``video`` (PyAV, optional).

A leaf package: bytes or an open file in, encoded bytes out. It imports nothing of filegate
but the leaf ``errors`` module (MediaError) and knows nothing of MCP, paths or policy;
``tools/read_media.py`` is its only caller. ``bounds`` bounds every decode (size, concurrency,
time); ``headers`` reads what Pillow would decode too early.
"""
