"""What an image's own header says, read without decoding anything.

Pillow opens most formats lazily (header only), but an ICO decodes its largest icon inside
``Image.open`` (an embedded 13000² PNG: 737 MB before any size check) and WebP allocates its
whole canvas there; their sizes are read here first. GIF frames are counted here by skipping
their data blocks, with a cap, instead of walking Pillow's frames one by one.
"""

from __future__ import annotations

import struct

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Bytes a pixel of an ICO entry or WebP canvas takes once decoded (Pillow makes them RGBA).
RGBA_BYTES = 4
# Frames counted at most; past it a GIF has "more than" this many.
MAX_COUNTED_FRAMES = 1000


def _ico_entry_size(data: bytes, entry: int) -> tuple[int, int]:
    """The real pixel size of one ICO directory entry: its embedded PNG's IHDR or its DIB
    header (whose height counts the AND mask too), else the directory's one-byte figures."""
    w, h = data[entry] or 256, data[entry + 1] or 256
    (offset,) = struct.unpack_from("<I", data, entry + 12)
    body = data[offset : offset + 24]
    if body[:8] == _PNG_SIGNATURE and len(body) >= 24:
        return struct.unpack_from(">II", body, 16)
    if len(body) >= 12:
        dib_w, dib_h = struct.unpack_from("<ii", body, 4)
        return abs(dib_w), abs(dib_h)
    return w, h


def ico_largest(data: bytes) -> tuple[int, int] | None:
    """Width and height of the ICO's largest image (any entry may be the one Pillow decodes),
    or None when ``data`` is not an ICO."""
    if len(data) < 6 or data[:4] != b"\0\0\1\0":
        return None
    (count,) = struct.unpack_from("<H", data, 4)
    count = min(count, (len(data) - 6) // 16)
    sizes = [_ico_entry_size(data, 6 + 16 * i) for i in range(count)]
    return max(sizes, key=lambda s: s[0] * s[1], default=None)


def webp_canvas(data: bytes) -> tuple[int, int] | None:
    """A WebP's canvas size from its first chunk (VP8, VP8L or VP8X), or None."""
    if len(data) < 30 or data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    chunk = data[12:16]
    if chunk == b"VP8 " and data[23:26] == b"\x9d\x01\x2a":
        w, h = struct.unpack_from("<HH", data, 26)
        return w & 0x3FFF, h & 0x3FFF
    if chunk == b"VP8X":
        w = int.from_bytes(data[24:27], "little") + 1
        h = int.from_bytes(data[27:30], "little") + 1
        return w, h
    if chunk == b"VP8L" and data[20] == 0x2F:
        (bits,) = struct.unpack_from("<I", data, 21)
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


def _skip_sub_blocks(data: bytes, pos: int) -> int:
    while pos < len(data):
        n = data[pos]
        pos += 1 + n
        if n == 0:
            break
    return pos


def _colour_table(flags: int) -> int:
    return 3 << ((flags & 7) + 1) if flags & 0x80 else 0


def gif_frames(data: bytes) -> tuple[int, bool]:
    """(frames, more): the GIF's image descriptors counted up to MAX_COUNTED_FRAMES; ``more``
    when it has more than that. One pass over the block structure, nothing decoded."""
    if len(data) < 13 or data[:3] != b"GIF":
        return 1, False
    pos = 13 + _colour_table(data[10])
    frames = 0
    while pos < len(data):
        block = data[pos]
        if block == 0x2C:  # image descriptor, local colour table, LZW code size, data blocks
            if frames == MAX_COUNTED_FRAMES:
                return frames, True
            frames += 1
            if pos + 10 > len(data):
                break
            pos += 10 + _colour_table(data[pos + 9]) + 1
            pos = _skip_sub_blocks(data, pos)
        elif block == 0x21:  # extension: label, then data blocks
            pos = _skip_sub_blocks(data, pos + 2)
        else:  # trailer (0x3B) or garbage: the end either way
            break
    return max(1, frames), False
