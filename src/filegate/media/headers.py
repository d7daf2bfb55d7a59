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


# JPEG frame markers whose scans are progressive (SOF2, SOF6, SOF10, SOF14): libjpeg keeps
# every DCT coefficient of the whole image while it decodes them, whatever the output scale.
_PROGRESSIVE_SOF = {0xC2, 0xC6, 0xCA, 0xCE}
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
# Bytes libjpeg keeps for one 8x8 block of coefficients (64 JCOEF, 16-bit each).
BLOCK_BYTES = 64 * 2
# Scans one JPEG may have: each is a pass over its components' coefficients, and a few
# bytes of scan can cover a whole image (EOB runs), so thousands of scans are a CPU bomb that
# no deadline check between input blocks can stop. Encoders write about 10 (libjpeg's
# progression; mozjpeg's at most ~20); libjpeg-turbo's fuzzers stop at 500.
MAX_JPEG_SCANS = 256


def _jpeg_scans(data: bytes, pos: int, limit: int) -> int:
    """Scans of the JPEG image whose first SOS segment starts at ``pos``, counted up to
    ``limit``. One pass over the markers, nothing decoded."""
    scans = 0
    n = len(data)
    while pos + 4 <= n:
        marker = data[pos + 1]
        if marker == 0xD9:  # EOI
            break
        (length,) = struct.unpack_from(">H", data, pos + 2)
        pos += 2 + length
        if marker != 0xDA:
            continue
        scans += 1
        if scans == limit:
            break
        # Entropy-coded data: a 0xFF byte is either stuffed (FF 00), a restart marker
        # (FF D0-D7), fill (FF FF) or the next marker.
        while True:
            pos = data.find(b"\xff", pos)
            if pos < 0 or pos + 1 >= n:
                return scans
            nxt = data[pos + 1]
            if nxt == 0 or 0xD0 <= nxt <= 0xD7 or nxt == 0xFF:
                pos += 1 if nxt == 0xFF else 2
                continue
            break
    return scans


def jpeg_coefficient_bytes(data: bytes) -> tuple[int, str, int] | None:
    """(bytes, why, scans) libjpeg holds in whole-image coefficient buffers while decoding this JPEG,
    whatever the scale it is asked to decode to; None for a single-scan baseline JPEG (which
    it decodes one row of blocks at a time) or when ``data`` is not a JPEG.

    libjpeg buffers every coefficient of a progressive JPEG (SOF2/6/10/14) and of a sequential
    one with more than one scan: per component, its blocks (rounded up to its sampling
    factors, as libjpeg allocates them) times 128 bytes. ``scans`` is counted up to
    MAX_JPEG_SCANS + 1.
    """
    if len(data) < 4 or data[:2] != b"\xff\xd8":
        return None
    pos, n = 2, len(data)
    sof: tuple[int, int, int, list[tuple[int, int]]] | None = None
    while pos + 4 <= n:
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte before a marker
            pos += 1
            continue
        (length,) = struct.unpack_from(">H", data, pos + 2)
        if marker in _SOF and pos + 10 <= n:
            height, width, count = struct.unpack_from(">HHB", data, pos + 5)
            comps = []
            for i in range(count):
                at = pos + 10 + 3 * i
                if at + 2 > n:
                    break
                sampling = data[at + 1]
                comps.append((max(1, sampling >> 4), max(1, sampling & 15)))
            sof = (marker, width, height, comps)
        elif marker == 0xDA:
            break
        pos += 2 + length
    if sof is None or not sof[3]:
        return None
    marker, width, height, comps = sof
    progressive = marker in _PROGRESSIVE_SOF
    scans = _jpeg_scans(data, pos, MAX_JPEG_SCANS + 1)
    if not progressive and scans < 2:
        return None
    hmax = max(h for h, _v in comps)
    vmax = max(v for _h, v in comps)
    total = 0
    for h, v in comps:
        bw = -(-width * h // (8 * hmax))
        bh = -(-height * v // (8 * vmax))
        total += (-(-bw // h) * h) * (-(-bh // v) * v) * BLOCK_BYTES
    return total, "a progressive JPEG" if progressive else "a JPEG with several scans", scans
