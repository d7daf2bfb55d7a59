"""detect_file_type with real libmagic and real Pillow-made images."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from filegate.policy import filetype
from filegate.policy.filetype import detect_file_type, sniff_signature


def image_bytes(fmt: str) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (20, 10), (200, 30, 30)).save(buf, fmt)
    return buf.getvalue()


@pytest.mark.parametrize(
    ("fmt", "mime"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp"),
     ("BMP", "image/bmp"), ("TIFF", "image/tiff"), ("ICO", "image/x-icon")],
)  # fmt: skip
def test_images_are_recognised_by_content_whatever_their_name(fmt: str, mime: str) -> None:
    assert detect_file_type("notes", image_bytes(fmt)) == filetype.FileType("image", mime)
    assert sniff_signature(image_bytes(fmt)) == mime


@pytest.mark.parametrize(
    ("name", "data", "kind"),
    [
        ("x.png", b"hello, I am text\n", "text"),
        ("notes.txt", b"BMW is a car brand\n", "text"),
        ("a.json", b'{"a": 1}\n', "text"),
        ("a.svg", b'<svg xmlns="http://www.w3.org/2000/svg"></svg>\n', "text"),
        ("utf16.txt", "hello wide world\n".encode("utf-16"), "text"),
        ("latin1.txt", "caf\xe9 na\xefve\n".encode("latin-1") * 20, "text"),
        ("doc.pdf", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", "unknown"),
        ("a.tar.gz", b"\x1f\x8b\x08\x00" + bytes(200), "unknown"),
        ("blob.txt", bytes(range(256)) * 8, "unknown"),
        ("clip.bin", b"\0\0\0\x20ftypisom\0\0\x02\0isomiso2avc1mp41" + bytes(64), "video"),
        ("webm", b"\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x84webm" + bytes(64), "video"),
    ],
)
def test_content_decides_the_kind(name: str, data: bytes, kind: str) -> None:
    assert detect_file_type(name, data).kind == kind


def test_two_byte_prefixes_are_not_signatures() -> None:
    for prefix in (b"BM", b"FLV", b"GIF8"):
        assert sniff_signature(prefix + b" is how this text starts\n") is None
        assert detect_file_type("notes.txt", prefix + b" is how this text starts\n").kind == "text"


def test_empty_file_is_text() -> None:
    assert detect_file_type("empty", b"").kind == "text"


# --- the same classification without libmagic (the signature table alone) ----------------

SAMPLES = [
    ("x.png", b"hello, I am text\n", "text"),
    ("notes.txt", b"BMW is a car brand\n", "text"),
    ("a.json", b'{"a": 1}\n', "text"),
    ("utf16.txt", "hello wide world\n".encode("utf-16"), "text"),
    ("latin1.txt", "caf\xe9 na\xefve\n".encode("latin-1") * 20, "text"),
    ("doc.pdf", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n\0", "unknown"),
    ("blob.txt", bytes(range(256)) * 8, "unknown"),
    ("clip.bin", b"\0\0\0\x20ftypisom\0\0\x02\0isomiso2avc1mp41" + bytes(64), "video"),
    ("gif.txt", b"GIF8 is how this text starts\n", "text"),
]


@pytest.fixture
def without_libmagic(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a machine without libmagic1 runs: the loader has failed once and is not retried."""
    monkeypatch.setattr(filetype, "_magic_failed", True)


@pytest.mark.parametrize(("name", "data", "kind"), SAMPLES)
def test_without_libmagic_the_signature_table_decides(
    without_libmagic: None, name: str, data: bytes, kind: str
) -> None:
    assert filetype._libmagic_mime(data) is None
    assert detect_file_type(name, data).kind == kind


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP", "BMP", "TIFF", "ICO"])
def test_without_libmagic_images_are_still_images(without_libmagic: None, fmt: str) -> None:
    assert detect_file_type("x", image_bytes(fmt)).kind == "image"


def test_with_libmagic_a_shell_script_is_text_by_its_libmagic_mime() -> None:
    got = detect_file_type("run", b"#!/bin/sh\necho hi\n")
    assert got.kind == "text"
    assert got.mime == ("text/x-shellscript" if filetype._libmagic_mime(b"#!/bin/sh\n") else "text/plain")


def test_a_name_breaks_a_tie_only_for_binary_data_libmagic_cannot_name(without_libmagic: None) -> None:
    data = b"\0\1\2\3" * 64
    assert detect_file_type("clip.mp4", data).kind == "video"
    assert detect_file_type("pic.png", data).kind == "image"
    assert detect_file_type("data.bin", data).kind == "unknown"
    assert detect_file_type("clip.mp4", b"plain words\n").kind == "text"
