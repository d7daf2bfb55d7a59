"""Generated inputs, made once under the cache directory (never in the repository)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from harness import CACHE, CORPUS

LOG_LINES = 10_000_000
# 107 bytes a line, 108 for 3,742 of every 10,000: 1,073,742,000 bytes, 1 GiB + 176.
LOG_BYTES = 1_073_742_000
SOURCE_BYTES = 50_000_000
MARKER_A = "/* filegate-bench: the one line StrReplaceFile edits (A) */"
MARKER_B = "/* filegate-bench: the one line StrReplaceFile edits (B) */"
PHOTO_SIZE = (6000, 4000)  # 24 MP


def corpus() -> Path:
    """The Linux 6.1 tree (`../shared/tools/corpus` prints its path, unpacking it once)."""
    out = subprocess.run([CORPUS], capture_output=True, text=True, check=True).stdout
    return Path(out.strip().splitlines()[-1])


def _ready(path: Path, size: int | None = None) -> bool:
    return path.is_file() and (size is None or path.stat().st_size == size)


def log_file() -> Path:
    """A 1 GiB, 10 M-line application log with realistic, varied lines."""
    path = CACHE / "data" / "app-1GiB.log"
    if _ready(path, LOG_BYTES):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    levels = ("INFO ", "DEBUG", "INFO ", "WARN ", "INFO ", "ERROR", "INFO ")
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="ascii", newline="\n") as f:
        batch: list[str] = []
        for i in range(LOG_LINES):
            s, ms = divmod(i, 1000)
            head = (f"2026-11-{1 + s // 86400 % 28:02d}T{s // 3600 % 24:02d}:{s // 60 % 60:02d}:"
                    f"{s % 60:02d}.{ms:03d}Z {levels[i % 7]} worker-{i % 17:02d} "
                    f"req={i * 2654435761 % 4294967296:08x} GET /api/v1/items/{i} ")  # fmt: skip
            tail = f"status={200 + (i % 13 == 0) * 304} ms={i % 997}"
            width = 107 if i % 10_000 >= 3742 else 108
            batch.append((head + tail).ljust(width - 1, ".")[: width - 1] + "\n")
            if len(batch) == 100_000:
                f.write("".join(batch))
                batch.clear()
        f.write("".join(batch))
    os.replace(tmp, path)
    assert path.stat().st_size == LOG_BYTES, path.stat().st_size
    return path


def source_file() -> Path:
    """50 MB of real C (kernel drivers, concatenated) with one unique marker line mid-file."""
    path = CACHE / "data" / "source-50MB.c"
    if _ready(path, SOURCE_BYTES):
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    chunks: list[bytes] = []
    size = 0
    for c in sorted((corpus() / "drivers").rglob("*.c")):
        data = c.read_bytes().replace(b"filegate-bench", b"filegate_bench")
        chunks.append(data)
        size += len(data)
        if size > SOURCE_BYTES:
            break
    blob = b"".join(chunks)
    mid = blob.index(b"\n", len(blob) // 2) + 1
    marker = MARKER_A.encode() + b"\n"
    blob = blob[:mid] + marker + blob[mid:]
    blob = blob[: SOURCE_BYTES - 1] + b"\n"
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(blob)
    os.replace(tmp, path)
    return path


def photo() -> Path:
    """A 6000x4000 photo-like JPEG (gradients + sensor-like noise), ~quality 90."""
    path = CACHE / "data" / "photo-24MP.jpg"
    if _ready(path):
        return path
    from PIL import Image, ImageFilter

    path.parent.mkdir(parents=True, exist_ok=True)
    w, h = PHOTO_SIZE
    grad = Image.linear_gradient("L").resize((w, h))
    rot = grad.rotate(90).resize((w, h))
    noise = Image.effect_noise((w // 4, h // 4), 60).resize((w, h), Image.Resampling.BICUBIC)
    fine = Image.effect_noise((w, h), 12)
    r = Image.blend(grad, noise, 0.5)
    g = Image.blend(rot, fine, 0.3)
    b = Image.blend(noise, fine, 0.5).filter(ImageFilter.GaussianBlur(1))
    img = Image.merge("RGB", (r, g, b))
    tmp = path.with_suffix(".tmp.jpg")
    img.save(tmp, "JPEG", quality=90)
    os.replace(tmp, path)
    return path


def small_file() -> Path:
    """A 50-line text file (the FASTMCP-4-NOTES §10 load test's input)."""
    path = CACHE / "data" / "small" / "small.txt"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"line {i:02d} of a small text file for the load test\n" for i in range(50)))
    return path


PDF_PAGES = 200
NOTEBOOK_MB = 50


def text_pdf() -> Path:
    """A 200-page text PDF (40 lines of prose a page, flate-compressed), written by hand."""
    path = CACHE / "data" / "docs" / "book-200p.pdf"
    if _ready(path):
        return path
    import zlib

    path.parent.mkdir(parents=True, exist_ok=True)
    kids = b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(PDF_PAGES))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, PDF_PAGES),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for p in range(PDF_PAGES):
        lines = [f"(page {p + 1}, line {i}: some ordinary prose of a report) Tj T*" for i in range(40)]
        content = zlib.compress(("BT /F1 11 Tf 13 TL 60 760 Td " + " ".join(lines) + " ET").encode())
        page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >>"
        objects.append(page + b" /Contents %d 0 R >>" % (5 + 2 * p))
        objects.append(
            b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content) + content + b"\nendstream"
        )
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1) + b"".join(
        b"%010d 00000 n \n" % o for o in offsets
    )
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


def image_notebook() -> Path:
    """A 50 MB notebook: 50 code cells, each with a 1 MB base64 PNG output (random bytes)."""
    path = CACHE / "data" / "docs" / "plots-50mb.ipynb"
    if _ready(path):
        return path
    import base64
    import json

    path.parent.mkdir(parents=True, exist_ok=True)
    image = base64.b64encode(os.urandom(750_000)).decode()
    cells = [
        {"cell_type": "code", "metadata": {}, "execution_count": i, "source": [f"plot({i})\n", "show()"],
         "outputs": [{"output_type": "display_data", "metadata": {}, "data": {"image/png": image}}]}
        for i in range(NOTEBOOK_MB)
    ]  # fmt: skip
    path.write_text(
        json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}, indent=1)
    )
    return path
