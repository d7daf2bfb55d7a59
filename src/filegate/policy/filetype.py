"""detect_file_type (SPEC §3): text | image | video | unknown, from content first."""

from __future__ import annotations

import codecs
import threading
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

Kind = Literal["text", "image", "video", "unknown"]

# How much of a file the sniffer looks at. libmagic needs about 2 KiB for the formats we
# care about; a longer sample makes the "no NUL, decodes as UTF-8" text test more reliable.
SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class FileType:
    kind: Kind
    mime: str


IMAGE_MIMES = {
    "image/png": "image/png",
    "image/jpeg": "image/jpeg",
    "image/gif": "image/gif",
    "image/webp": "image/webp",
    "image/bmp": "image/bmp",
    "image/x-ms-bmp": "image/bmp",
    "image/tiff": "image/tiff",
    "image/vnd.microsoft.icon": "image/x-icon",
    "image/x-icon": "image/x-icon",
    "image/heic": "image/heic",
    "image/heif": "image/heif",
    "image/heic-sequence": "image/heic",
    "image/heif-sequence": "image/heif",
    "image/avif": "image/avif",
}
VIDEO_MIMES = {
    "video/mp4": "video/mp4",
    "video/x-m4v": "video/x-m4v",
    "video/quicktime": "video/quicktime",
    "video/webm": "video/webm",
    "video/x-matroska": "video/x-matroska",
    "video/x-msvideo": "video/x-msvideo",
    "video/avi": "video/x-msvideo",
    "video/x-ms-asf": "video/x-ms-wmv",
    "video/x-ms-wmv": "video/x-ms-wmv",
    "video/x-flv": "video/x-flv",
    "video/3gpp": "video/3gpp",
    "video/3gpp2": "video/3gpp2",
}
# libmagic answers that are text although not text/* (SPEC §3).
TEXT_MIMES = {
    "application/json",
    "application/x-empty",
    "image/svg+xml",
    "application/xml",
    "application/javascript",
    "application/x-ndjson",
    "application/x-wine-extension-ini",
    "application/csv",
}
# By extension, only when the content says nothing better than "some bytes".
EXT_MEDIA = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
    ".webp": "image/webp", ".bmp": "image/bmp", ".tif": "image/tiff", ".tiff": "image/tiff",
    ".ico": "image/x-icon", ".heic": "image/heic", ".heif": "image/heif", ".avif": "image/avif",
    ".mp4": "video/mp4", ".m4v": "video/x-m4v", ".mov": "video/quicktime",
    ".webm": "video/webm", ".mkv": "video/x-matroska", ".avi": "video/x-msvideo",
    ".wmv": "video/x-ms-wmv", ".flv": "video/x-flv", ".3gp": "video/3gpp", ".3g2": "video/3gpp2",
}  # fmt: skip

# Byte order marks and their codecs, longest first (UTF-32-LE's mark starts with UTF-16-LE's):
# the one table, read here (a BOM makes a file text) and by fsio/codec.py (it decides a codec).
BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


def _kind_of(mime: str) -> FileType | None:
    if mime in IMAGE_MIMES:
        return FileType("image", IMAGE_MIMES[mime])
    if mime in VIDEO_MIMES:
        return FileType("video", VIDEO_MIMES[mime])
    if mime.startswith("text/") or mime in TEXT_MIMES:
        return FileType("text", "text/plain" if mime == "application/x-empty" else mime)
    return None


# --- libmagic, with a pure-Python table when it is missing ---------------------------------

_magic_lock = threading.Lock()
_magic: object | None = None
_magic_failed = False


def _libmagic_mime(header: bytes) -> str | None:
    global _magic, _magic_failed
    if _magic_failed:
        return None
    try:
        with _magic_lock:  # a libmagic handle is not thread-safe
            if _magic is None:
                import magic

                _magic = magic.Magic(mime=True)
            return str(_magic.from_buffer(header))  # type: ignore[attr-defined]
    except Exception:  # ImportError (no libmagic1) or a libmagic failure
        _magic_failed = True
        return None


def _ftyp_brand(h: bytes) -> str:
    return h[8:12].decode("latin-1").strip().lower() if h[4:8] == b"ftyp" else ""


_ISO_IMAGE = {"avif": "image/avif", "avis": "image/avif", "heic": "image/heic",
              "heix": "image/heic", "hevc": "image/heic", "heif": "image/heif",
              "mif1": "image/heif", "msf1": "image/heif"}  # fmt: skip
_ISO_VIDEO = {"isom": "video/mp4", "iso2": "video/mp4", "iso4": "video/mp4", "iso5": "video/mp4",
              "iso6": "video/mp4", "mp41": "video/mp4", "mp42": "video/mp4", "avc1": "video/mp4",
              "mp4v": "video/mp4", "dash": "video/mp4", "m4v": "video/x-m4v",
              "qt": "video/quicktime", "3gp4": "video/3gpp", "3gp5": "video/3gpp",
              "3gp6": "video/3gpp", "3gp7": "video/3gpp", "3g2a": "video/3gpp2"}  # fmt: skip


def sniff_signature(h: bytes) -> str | None:
    """Full signatures only (never a 2-byte guess such as 'BM' alone)."""
    if h.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if h.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if h[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if h[:4] == b"RIFF" and h[8:12] == b"WEBP":
        return "image/webp"
    if h[:4] == b"RIFF" and h[8:12] == b"AVI ":
        return "video/x-msvideo"
    if (
        len(h) >= 18
        and h[:2] == b"BM"
        and h[6:10] == b"\0\0\0\0"
        and int.from_bytes(h[14:18], "little") in (12, 40, 52, 56, 64, 108, 124)
    ):
        return "image/bmp"
    if h[:4] in (b"II*\0", b"MM\0*") and len(h) >= 8:
        return "image/tiff"
    if h[:4] == b"\0\0\1\0" and len(h) >= 6 and 0 < int.from_bytes(h[4:6], "little") < 256:
        return "image/x-icon"
    if h[:4] == b"FLV\x01":
        return "video/x-flv"
    if h.startswith(bytes.fromhex("3026B2758E66CF11A6D900AA0062CE6C")):
        return "video/x-ms-wmv"
    if h[:4] == b"\x1a\x45\xdf\xa3":
        low = h[:4096].lower()
        if b"webm" in low:
            return "video/webm"
        if b"matroska" in low:
            return "video/x-matroska"
    brand = _ftyp_brand(h)
    if brand:
        return _ISO_IMAGE.get(brand) or _ISO_VIDEO.get(brand)
    return None


def _looks_like_text(h: bytes) -> bool:
    if h.startswith(tuple(bom for bom, _ in BOMS)):
        return True
    if b"\0" in h:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(h, final=False)
    except UnicodeDecodeError:
        # Not UTF-8; still text if almost all bytes are printable (latin-1 and friends).
        printable = sum(1 for b in h if b >= 0x20 or b in (9, 10, 12, 13))
        return printable >= 0.95 * len(h)
    return True


# A PDF's header may follow other bytes within its first KiB (ISO 32000-1, 7.5.2 and Annex H).
PDF_HEADER_WITHIN = 1024


def document_kind(name: str, header: bytes) -> Literal["notebook", "pdf"] | None:
    """A document ReadFile shows as a view (SPEC §8.6): a PDF by its content; a ``.ipynb`` file
    whose content begins as a JSON object is a notebook candidate (whether it parses as
    notebook JSON is found when it is read: a file that does not is read as text)."""
    if b"%PDF-" in header[:PDF_HEADER_WITHIN]:
        return "pdf"
    if PurePath(name).suffix.lower() == ".ipynb" and header.lstrip(b" \t\r\n\xef\xbb\xbf")[:1] == b"{":
        return "notebook"
    return None


def detect_file_type(name: str, header: bytes) -> FileType:
    """Classify a file by its first bytes (``header``); its name only breaks a tie."""
    if not header:
        return FileType("text", "text/plain")
    mime = _libmagic_mime(header) or sniff_signature(header) or "application/octet-stream"
    kind = _kind_of(mime)
    if kind is None and mime == "application/octet-stream":
        sig = sniff_signature(header)
        kind = _kind_of(sig) if sig else None
    if kind is not None and kind.kind != "text":
        # libmagic trusts short prefixes too ("GIF8" alone is a GIF to it): media must also
        # carry a full signature, or else be text if it reads as text.
        if sniff_signature(header) is None and _looks_like_text(header):
            return FileType("text", "text/plain")
        return kind
    if kind is not None or (mime == "application/octet-stream" and _looks_like_text(header)):
        return kind or FileType("text", "text/plain")
    if mime == "application/octet-stream":
        ext = EXT_MEDIA.get(PurePath(name).suffix.lower())
        if ext is not None and b"\0" in header:
            return _kind_of(ext) or FileType("unknown", mime)  # pragma: no mutate (ext is always media)
    return FileType("unknown", mime)
