"""Media fitted to a character budget: ``image`` (Pillow) and ``video`` (PyAV, optional).

A leaf package: bytes or an open file in, encoded bytes out. It imports nothing of filegate
but the leaf ``errors`` module (MediaError) and knows nothing of MCP, paths or policy;
``tools/read_media.py`` is its only caller. ``bounds`` bounds every decode (size, concurrency,
time); ``headers`` reads what Pillow would decode too early.
"""

from __future__ import annotations

import importlib.util
import sys


def installed(module: str) -> bool:
    """Whether an optional extra's module (``av``, ``pypdfium2``) can be imported, without
    importing it into this process (the worker imports it)."""
    if module in sys.modules:  # a module hidden as None, or one already imported
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
