"""The pure-Python signature table (SPEC §3's fallback when libmagic is missing), each entry at
its edge: the full signature is recognised and one byte less or one field off is not; the
text test's 95 % printable threshold; libmagic's answers mapped to filegate's MIME types."""

from __future__ import annotations

import pytest

from filegate.policy import filetype
from filegate.policy.filetype import FileType, detect_file_type, sniff_signature

PAD = bytes(32)


def bmp(header_size: int) -> bytes:
    return (
        b"BM"
        + (70).to_bytes(4, "little")
        + b"\0\0\0\0"
        + (54).to_bytes(4, "little")
        + header_size.to_bytes(4, "little")
        + PAD
    )


def ftyp(brand: bytes) -> bytes:
    return b"\0\0\0\x18ftyp" + brand + b"\0\0\0\0" + PAD


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (b"\x89PNG\r\n\x1a\n" + PAD, "image/png"),
        (b"\xff\xd8\xff\xe0" + PAD, "image/jpeg"),
        (b"GIF87a" + PAD, "image/gif"),
        (b"GIF89a" + PAD, "image/gif"),
        (b"RIFF\0\0\0\0WEBPVP8 " + PAD, "image/webp"),
        (b"RIFF\0\0\0\0AVI LIST" + PAD, "video/x-msvideo"),
        (bmp(12), "image/bmp"),
        (bmp(40), "image/bmp"),
        (bmp(52), "image/bmp"),  # BITMAPV2INFOHEADER
        (bmp(56), "image/bmp"),  # BITMAPV3INFOHEADER
        (bmp(64), "image/bmp"),  # OS/2 BITMAPINFOHEADER2
        (bmp(108), "image/bmp"),  # BITMAPV4HEADER
        (bmp(124), "image/bmp"),  # BITMAPV5HEADER
        (bmp(40)[:18], "image/bmp"),  # the shortest head that holds the DIB header's size
        (b"II*\0\x08\0\0\0", "image/tiff"),
        (b"MM\0*\0\0\0\x08", "image/tiff"),
        (b"\0\0\1\0\1\0" + PAD, "image/x-icon"),
        (b"\0\0\1\0\xff\0" + PAD, "image/x-icon"),
        (b"\0\0\1\0\1\0", "image/x-icon"),  # the icon directory's 6 bytes alone
        (b"FLV\x01\x05" + PAD, "video/x-flv"),
        (bytes.fromhex("3026B2758E66CF11A6D900AA0062CE6C") + PAD, "video/x-ms-wmv"),
        (b"\x1a\x45\xdf\xa3\x9f\x42\x82\x84WebM" + PAD, "video/webm"),
        (b"\x1a\x45\xdf\xa3\x9f\x42\x82\x88Matroska" + PAD, "video/x-matroska"),
        (ftyp(b"avif"), "image/avif"),
        (ftyp(b"heic"), "image/heic"),
        (ftyp(b"mif1"), "image/heif"),
        (ftyp(b"isom"), "video/mp4"),
        (ftyp(b"M4V "), "video/x-m4v"),
        (ftyp(b"qt  "), "video/quicktime"),
        (ftyp(b"3gp5"), "video/3gpp"),
        (ftyp(b"3g2a"), "video/3gpp2"),
    ],
)
def test_each_full_signature(data: bytes, mime: str) -> None:
    assert sniff_signature(data) == mime


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a" + b"x",  # one byte short of PNG's eight
        b"\xff\xd8x",
        b"GIF88a" + PAD,
        b"RIFF\0\0\0\0WAVEfmt " + PAD,
        bmp(41),
        b"BM" + bytes(4) + b"\0\0\0\1" + bytes(4) + (40).to_bytes(4, "little"),  # reserved bytes set
        (b"BM" + bytes(12) + (40).to_bytes(4, "little"))[:17],  # header size cut off
        b"II*\0\x08\0\0",  # 7 bytes: no IFD offset
        b"\0\0\1\0\0\0" + PAD,  # an icon directory of 0 images
        b"\0\0\1\0\0\1" + PAD,  # or of 256
        b"\0\0\1\0\1",  # count cut off
        b"\0\0\2\0\1\0" + PAD,  # a cursor, not an icon
        b"FLV\x02" + PAD,
        b"\x1a\x45\xdf\xa3" + b"unknown doctype" + PAD,
        ftyp(b"xxxx"),
        b"\0\0\0\x18ftyq" + b"isom" + PAD,
        b"",
    ],
)
def test_near_misses_are_not_signatures(data: bytes) -> None:
    assert sniff_signature(data) is None


def test_a_matroska_doctype_past_4096_bytes_is_not_looked_for() -> None:
    assert sniff_signature(b"\x1a\x45\xdf\xa3" + bytes(4092) + b"webm") is None
    assert sniff_signature(b"\x1a\x45\xdf\xa3" + bytes(4088) + b"webm") == "video/webm"


@pytest.fixture
def without_libmagic(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(filetype, "_magic_failed", True)


def latin1_text(printable: int, control: int) -> bytes:
    """Not UTF-8 (a lone 0xE9 per 20 bytes), ``printable`` bytes ≥ 0x20 and ``control`` bytes 0x01."""
    body = (b"caf\xe9 " * printable)[:printable]
    return body + b"\x01" * control


def test_not_utf8_is_text_from_95_percent_printable_bytes(without_libmagic: None) -> None:
    assert detect_file_type("x", latin1_text(95, 5)).kind == "text"
    assert detect_file_type("x", latin1_text(94, 6)).kind == "unknown"
    # tab, LF, FF and CR count as printable; other controls do not
    assert detect_file_type("x", latin1_text(80, 0) + b"\t\n\x0c\r" * 5).kind == "text"
    assert detect_file_type("x", latin1_text(80, 0) + b"\x0b\x1b\x08\x7f"[:3] * 7).kind == "unknown"


def test_a_nul_byte_is_never_text_but_a_bom_always_is(without_libmagic: None) -> None:
    assert detect_file_type("x", b"plain text with a \0 in it").kind == "unknown"
    assert detect_file_type("x", "wide\n".encode("utf-16-le")).kind == "unknown"
    assert detect_file_type("x", "wide\n".encode("utf-16")).kind == "text"
    assert detect_file_type("x", "wide\n".encode("utf-32")) == FileType("text", "text/plain")


def test_utf8_cut_mid_character_at_the_sample_end_is_text(without_libmagic: None) -> None:
    assert detect_file_type("x", "ünïcödé".encode() * 10 + "é".encode()[:1]).kind == "text"


def test_media_with_a_full_signature_keeps_its_mime(without_libmagic: None) -> None:
    assert detect_file_type("x.txt", b"\x89PNG\r\n\x1a\n" + PAD) == FileType("image", "image/png")
    assert detect_file_type("x", bmp(40)) == FileType("image", "image/bmp")
    assert detect_file_type("x", ftyp(b"isom")) == FileType("video", "video/mp4")


def test_an_unknown_binary_keeps_the_octet_stream_mime(without_libmagic: None) -> None:
    data = bytes(range(256))
    assert detect_file_type("x.bin", data) == FileType("unknown", "application/octet-stream")
    # a media extension breaks a tie only for data with a NUL in it
    assert detect_file_type("x.png", b"\xff\x01" * 100) == FileType("unknown", "application/octet-stream")


@pytest.mark.parametrize(
    ("mime", "expected"),
    [
        ("image/png", FileType("image", "image/png")),
        ("image/x-ms-bmp", FileType("image", "image/bmp")),
        ("image/vnd.microsoft.icon", FileType("image", "image/x-icon")),
        ("image/heic-sequence", FileType("image", "image/heic")),
        ("video/avi", FileType("video", "video/x-msvideo")),
        ("video/x-ms-asf", FileType("video", "video/x-ms-wmv")),
        ("text/x-python", FileType("text", "text/x-python")),
        ("application/json", FileType("text", "application/json")),
        ("application/x-empty", FileType("text", "text/plain")),
        ("image/svg+xml", FileType("text", "image/svg+xml")),
        ("application/pdf", None),
        ("image/x-xcf", None),
        ("textual/x", None),
    ],
)
def test_mime_to_kind(mime: str, expected: FileType | None) -> None:
    assert filetype._kind_of(mime) == expected


def test_a_media_mime_filegate_does_not_serve_is_unknown_with_that_mime() -> None:
    # libmagic names an xcf image; filegate serves none: unknown, the mime kept.
    got = detect_file_type("pic.xcf", b"gimp xcf v011\0\0\0\x10\0\0\0\x10" + bytes(64))
    if filetype._libmagic_mime(b"gimp xcf v011\0") is None:
        pytest.skip("needs libmagic (test_libmagic fails CI where it is missing)")
    assert got == FileType("unknown", "image/x-xcf")


def test_libmagic_failing_once_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        calls = 0

        def from_buffer(self, header: bytes) -> str:
            Broken.calls += 1
            raise RuntimeError("libmagic failed")

    # A stand-in for a libmagic handle that fails (a mock, named as one): the real one does not.
    monkeypatch.setattr(filetype, "_magic", Broken())
    monkeypatch.setattr(filetype, "_magic_failed", False)
    assert filetype._libmagic_mime(b"x") is None
    assert filetype._libmagic_mime(b"x") is None
    assert Broken.calls == 1


@pytest.mark.parametrize("byte", [b"\t", b"\n", b"\x0c", b"\r"])
def test_each_layout_control_counts_as_printable(byte: bytes, without_libmagic: None) -> None:
    latin1 = (b"caf\xe9 " * 18)[:90]
    assert filetype.detect_file_type("x", latin1 + byte * 10).kind == "text"
    assert filetype.detect_file_type("x", latin1 + b"\x0e" * 10).kind == "unknown"
    assert filetype.detect_file_type("x", latin1 + b"\x0b" * 10).kind == "unknown"


def test_utf8_cut_mid_character_is_still_utf8_even_among_controls(without_libmagic: None) -> None:
    assert filetype.detect_file_type("x", b"\x01" * 10 + "é".encode()[:1]).kind == "text"


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", FileType("text", "text/plain")),
        (b"\x89PNG\r\n\x1a\n" + PAD, FileType("image", "image/png")),  # libmagic: octet-stream (no IHDR)
        (b"\x1a\x45\xdf\xa3\x9f\x42\x82\x84WebM" + PAD, FileType("video", "video/webm")),
        (b"GIF8 is how this text starts\n", FileType("text", "text/plain")),  # libmagic: image/gif
    ],
)
def test_the_table_rescues_what_libmagic_calls_bytes_and_text_beats_a_short_prefix(
    data: bytes, expected: FileType
) -> None:
    assert detect_file_type("name", data) == expected
