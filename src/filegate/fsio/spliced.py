"""Bytes made of a base with one span replaced, held as pieces and never joined.

One edit of a large file changes a few bytes in the middle. Building the new content as one
``bytes`` object copies the whole file (and holds it twice); a :class:`Spliced` keeps the base
and the replacement and answers what the write route asks of the new content — its length,
slices of it, newline counts and searches, equality — from the pieces. The write sends the
pieces to the file with ``os.writev``; the hash of a question updates over them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import blake3


class Spliced:
    """``base[:start] + middle + base[end:]``, without building it."""

    __slots__ = ("base", "end", "middle", "start")

    def __init__(self, base: bytes, start: int, end: int, middle: bytes) -> None:
        if not 0 <= start <= end <= len(base):
            raise ValueError(f"span {start}:{end} is not within {len(base)} bytes")
        self.base = base
        self.start = start
        self.end = end
        self.middle = middle

    def __len__(self) -> int:
        return len(self.base) - (self.end - self.start) + len(self.middle)

    def __repr__(self) -> str:
        return f"Spliced({len(self.base)} bytes, [{self.start}:{self.end}] -> {len(self.middle)} bytes)"

    def pieces(self) -> list[memoryview]:
        """The content in order, as views (empty pieces left out)."""
        whole = memoryview(self.base)
        parts = [whole[: self.start], memoryview(self.middle), whole[self.end :]]
        return [p for p in parts if len(p)]

    def __bytes__(self) -> bytes:
        return b"".join(self.pieces())

    def _parts(self, i: int, j: int) -> Iterator[tuple[bytes, int, int]]:
        """(source, start, end) of the pieces covering ``self[i:j]`` (0 ≤ i ≤ j ≤ len)."""
        cut = self.start + len(self.middle)  # where the base's tail starts in self
        if i < self.start:
            yield self.base, i, min(j, self.start)
        if i < cut and j > self.start:
            yield self.middle, max(i, self.start) - self.start, min(j, cut) - self.start
        if j > cut:
            shift = self.end - cut
            yield self.base, max(i, cut) + shift, j + shift

    def _bounds(self, i: int | None, j: int | None) -> tuple[int, int]:
        n = len(self)
        i, j, _ = slice(i, j).indices(n)
        return i, max(i, j)

    def __getitem__(self, key: slice) -> bytes:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("Spliced supports contiguous slices only")
        i, j = self._bounds(key.start, key.stop)
        return b"".join(src[a:b] for src, a, b in self._parts(i, j))

    def count(self, byte: bytes, i: int | None = None, j: int | None = None) -> int:
        """Occurrences of one byte in ``self[i:j]`` (a longer needle could straddle pieces)."""
        _one_byte(byte)
        i, j = self._bounds(i, j)
        return sum(src.count(byte, a, b) for src, a, b in self._parts(i, j))

    def find(self, byte: bytes, i: int | None = None, j: int | None = None) -> int:
        """The first index of one byte in ``self[i:j]``, or -1."""
        _one_byte(byte)
        i, j = self._bounds(i, j)
        at = i
        for src, a, b in self._parts(i, j):
            pos = src.find(byte, a, b)
            if pos >= 0:
                return at + pos - a
            at += b - a
        return -1

    def startswith(self, prefix: bytes, i: int = 0) -> bool:
        return self[i : i + len(prefix)] == prefix and i + len(prefix) <= len(self)

    def endswith(self, suffix: bytes, i: int | None = None, j: int | None = None) -> bool:
        i, j = self._bounds(i, j)
        return j - i >= len(suffix) and self[j - len(suffix) : j] == suffix

    def equals(self, other: bytes) -> bool:
        """Whether the content is exactly ``other`` (compared in place, nothing joined)."""
        if len(self) != len(other):
            return False
        if other is self.base:  # only the replaced span can differ
            return other.startswith(self.middle, self.start)
        at = 0
        for piece in self.pieces():
            if not other.startswith(piece, at):
                return False
            at += len(piece)
        return True

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Spliced):
            other = bytes(other)
        return isinstance(other, bytes) and self.equals(other)

    __hash__ = None  # type: ignore[assignment]  # equal to bytes, so unhashable like bytearray


def _one_byte(byte: bytes) -> None:
    if len(byte) != 1:
        raise ValueError("Spliced searches for one byte at a time")


Content = bytes | Spliced


def content_pieces(data: Content) -> list[memoryview]:
    """``data`` as views in order, for ``os.writev``."""
    return data.pieces() if isinstance(data, Spliced) else [memoryview(data)]


def content_hash(data: Content, algorithm: str = "blake3") -> str:
    """The hex digest of ``data``, its pieces fed in order: BLAKE3 (the write history's content
    addresses) or SHA-256 (what a question binds its answer to, and the history's records
    written before BLAKE3)."""
    h = blake3.blake3() if algorithm == "blake3" else hashlib.sha256()
    for piece in content_pieces(data):
        h.update(piece)
    return h.hexdigest()
