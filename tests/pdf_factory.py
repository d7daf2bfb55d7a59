"""PDFs written by hand, byte by byte, for the tests: text pages, blank pages, and the bombs
SPEC §8.6 names (a flate bomb, many pages, a broken xref, a recursive object graph)."""

from __future__ import annotations

import random
import zlib
from pathlib import Path


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def content_of(lines: list[str]) -> bytes:
    """A content stream that shows ``lines`` one under another in Helvetica."""
    ops = ["BT /F1 12 Tf 14 TL 72 760 Td"] + [f"({_escape(line)}) Tj T*" for line in lines] + ["ET"]
    return "\n".join(ops).encode("latin-1")


def build(objects: list[bytes], root: int = 1, *, xref: bool = True, trailer_extra: bytes = b"") -> bytes:
    """A PDF of ``objects`` (object i+1 is objects[i]), with a correct xref unless told not."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    start = len(out)
    if xref:
        out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
        out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    else:
        out += b"xref\n0 %d\n" % (len(objects) + 1) + b"garbage garbage\n" * 3
    out += b"trailer\n<< /Size %d /Root %d 0 R %s>>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, root, trailer_extra, start,
    )  # fmt: skip
    return bytes(out)


def stream(data: bytes, *, flate: bool = False, extra: bytes = b"") -> bytes:
    if flate:
        data = zlib.compress(data, 9)
        extra += b" /Filter /FlateDecode"
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


def text_pdf(pages: list[list[str] | None], *, flate: bool = False) -> bytes:
    """One page per item: its lines of text, or None for a page with no text layer."""
    n = len(pages)
    # 1 catalog, 2 pages, 3 font, then per page: the page and its content stream.
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(n))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, n),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, lines in enumerate(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * i)
        )
        objects.append(stream(content_of(lines or []), flate=flate))
    return build(objects)


def write_text_pdf(path: Path, pages: list[list[str] | None], **kw: bool) -> Path:
    path.write_bytes(text_pdf(pages, **kw))
    return path


def _one_page(content: bytes, resources: bytes = b"/Font << /F1 3 0 R >>") -> list[bytes]:
    return [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << %s >> /Contents 5 0 R >>"
        % resources,
        content,
    ]


def flate_bomb(inflated: int = 1 << 30) -> bytes:
    """One page whose content stream is ~1 MB of flate that inflates to ``inflated`` zeros."""
    packer = zlib.compressobj(9)
    block = b"\0" * (1 << 20)
    data = b"".join(packer.compress(block) for _ in range(inflated >> 20)) + packer.flush()
    return build(
        _one_page(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream")
    )


def cyclic_page_tree() -> bytes:
    """A page tree whose node lists itself among its kids."""
    objects = _one_page(stream(content_of(["hi"])))
    objects[1] = b"<< /Type /Pages /Kids [2 0 R 4 0 R] /Count 2 >>"
    return build(objects)


def self_drawing_form() -> bytes:
    """A page drawing a form XObject that draws itself, forever."""
    form = stream(
        b"BT /F1 12 Tf (inside) Tj ET /X1 Do",
        extra=b" /Type /XObject /Subtype /Form /BBox [0 0 10 10]"
        b" /Resources << /Font << /F1 3 0 R >> /XObject << /X1 6 0 R >> >>",
    )
    return build([*_one_page(stream(b"/X1 Do"), b"/Font << /F1 3 0 R >> /XObject << /X1 6 0 R >>"), form])


def broken_xref() -> bytes:
    """A PDF whose xref table is garbage and whose objects cannot be found by a scan either."""
    return build([b"<< /Type /Catalog /Pages 2 0 R >>"], xref=False)


def broken_object(marker: bytes) -> bytes:
    """A PDF whose page tree points at an object that is ``marker`` and then garbage: pypdf's
    own error quotes the bytes around it."""
    return build(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            marker + b" ((( <<",
        ]
    )


def drawn_pdf(pages: list[bytes], box: tuple[float, float] = (612, 792)) -> bytes:
    """One page per content stream in ``pages`` (PDF drawing operators), each ``box`` points."""
    n = len(pages)
    kids = b" ".join(b"%d 0 R" % (3 + 2 * i) for i in range(n))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, n)]
    for i, content in enumerate(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %g %g] /Contents %d 0 R >>" % (*box, 4 + 2 * i)
        )
        objects.append(stream(content))
    return build(objects)


def left_half_black(box: tuple[float, float] = (612, 792)) -> bytes:
    """A page whose left half is a filled black rectangle and whose right half is blank."""
    w, h = box
    return drawn_pdf([b"0 0 0 rg 0 0 %g %g re f" % (w / 2, h)], box)


def zeros_flate(block: int, count: int) -> bytes:
    """A zlib stream of ``block * count`` zero bytes, made in about a second: after a full
    flush the deflater's state is reset, so each block compresses to the same bytes, repeated."""
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate: the zlib frame is added here
    zeros = bytes(block)
    one = packer.compress(zeros) + packer.flush(zlib.Z_FULL_FLUSH)
    check = 1
    for _ in range(count):
        check = zlib.adler32(zeros, check)
    return b"\x78\xda" + one * count + packer.flush() + check.to_bytes(4, "big")


def image_bomb(side: int = 16_000) -> bytes:
    """A page drawing a ``side`` x ``side`` RGB image (768 MB once decoded at 16,000 px) whose
    flate stream is well under a megabyte."""
    data = zeros_flate(side * 3 * 1000, side // 1000)
    image = (
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB "
        b"/BitsPerComponent 8 /Length %d /Filter /FlateDecode >>\nstream\n"
        % (side, side, len(data))
        + data
        + b"\nendstream"
    )
    return build(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /XObject << /Im1 5 0 R >> >> /Contents 4 0 R >>",
            stream(b"q 612 0 0 792 0 0 cm /Im1 Do Q"),
            image,
        ]
    )


def noise_pdf(pages: int, side: int, *, tile: int | None = None, seed: int = 3) -> bytes:
    """``pages`` pages of ``side`` x ``side`` points covered by an image of random RGB pixels
    (``tile`` points square, repeated; the whole page by default), each page its own image.
    Drawn at ``side`` pixels, nothing compresses them (JPEG codes 8x8 blocks, blind to the
    repetition): a page's picture takes all the room it is given."""
    tile = tile or side
    rnd = random.Random(seed)
    kids = b" ".join(b"%d 0 R" % (3 + 3 * i) for i in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
    ]
    image = b" /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceRGB /BitsPerComponent 8"
    tiles = b" ".join(
        b"q %d 0 0 %d %d %d cm /Im1 Do Q" % (tile, tile, x, y)
        for x in range(0, side, tile)
        for y in range(0, side, tile)
    )
    for i in range(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] "
            b"/Resources << /XObject << /Im1 %d 0 R >> >> /Contents %d 0 R >>"
            % (side, side, 5 + 3 * i, 4 + 3 * i)
        )
        objects.append(stream(tiles))
        objects.append(stream(rnd.randbytes(tile * tile * 3), extra=image % (tile, tile)))
    return build(objects)
