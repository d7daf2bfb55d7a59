"""The battlefield for the path-attack tests: a workspace, secrets and outside files full of canaries.

Every outside file holds ``OUTSIDE_CANARY`` (in its text, or inside a PNG text chunk that only
survives when the image's own bytes reach the client) and every sensitive file holds
``SECRET_CANARY``. ``leaks(result)`` looks for them in every content block of a result: text,
structuredContent, and the *decoded* bytes of image and resource blocks. ``snapshot`` records
every entry of the outside directories so a test can prove that nothing there changed.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image, PngImagePlugin

OUTSIDE_CANARY = "OUTSIDE-CANARY-7f3a9c"
SECRET_CANARY = "SECRET-CANARY-b41e02"
# A name listed only by a directory listing that escaped: no attack path ever names it.
LISTING_MARKER = "zz-listed-only-if-escaped"
PWNED = "PWNED-by-the-attack"

# Sensitive names (SPEC §2.6) placed inside and outside.
SECRET_NAMES = (".env", "id_rsa")


def canary_png(text: str) -> bytes:
    """A tiny PNG whose tEXt chunk carries ``text``: it reaches the client only byte for byte."""
    info = PngImagePlugin.PngInfo()
    info.add_text("canary", text)
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buf, "PNG", pnginfo=info)
    return buf.getvalue()


def fill_outside(d: Path) -> None:
    """An outside directory: a plain file, an image, secrets, a subdirectory, a listing marker."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "plain.txt").write_text(f"first line\n{OUTSIDE_CANARY} plain\nlast line\n")
    (d / "pic.png").write_bytes(canary_png(OUTSIDE_CANARY))
    for name in SECRET_NAMES:
        (d / name).write_text(f"TOKEN={SECRET_CANARY}\n")
    (d / "sub").mkdir(exist_ok=True)
    (d / "sub" / "deep.txt").write_text(f"{OUTSIDE_CANARY} deep\n")
    (d / LISTING_MARKER).write_text(f"{OUTSIDE_CANARY} marker\n")


@dataclass(frozen=True)
class Layout:
    base: Path  # holds everything below; itself outside the workspace
    ws: Path  # the workspace (non-ASCII, NFC: "proj-café")
    outside: Path  # a plain directory beside it
    evil: Path  # "/…/proj-café-evil": shares the workspace's prefix
    nfd: Path  # "/…/proj-café" spelled NFD: another directory on Linux
    home: Path  # $HOME during the tests

    @property
    def outside_dirs(self) -> tuple[Path, ...]:
        return (self.outside, self.evil, self.nfd, self.home)


def build_layout(tmp_path: Path) -> Layout:
    base = Path(os.path.realpath(tmp_path)) / "arena"
    ws = base / "proj-caf\u00e9"
    lay = Layout(
        base=base,
        ws=ws,
        outside=base / "outside",
        evil=base / "proj-caf\u00e9-evil",
        nfd=base / "proj-cafe\u0301",
        home=base / "home",
    )
    ws.mkdir(parents=True)
    for d in lay.outside_dirs:
        fill_outside(d)
    # Inside: ordinary files, an image, secrets, and names an attack may collide with.
    (ws / "plain.txt").write_text("inside plain\n")
    (ws / "readme.md").write_text("inside readme\n")
    (ws / "pic.png").write_bytes(canary_png("inside picture"))
    (ws / "sub").mkdir()
    (ws / "sub" / "inner.txt").write_text("inner\n")
    for name in SECRET_NAMES:
        (ws / name).write_text(f"TOKEN={SECRET_CANARY}\n")
    return lay


# --- did anything change outside? ----------------------------------------------------------


def snapshot(*dirs: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry below ``dirs``: kind, mode, inode, and content hash or link target."""
    out: dict[str, tuple[Any, ...]] = {}
    for root in dirs:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in [*dirnames, *filenames]:
                p = os.path.join(dirpath, name)
                st = os.lstat(p)
                if stat.S_ISLNK(st.st_mode):
                    out[p] = ("link", os.readlink(p))
                elif stat.S_ISREG(st.st_mode):
                    digest = hashlib.sha256(Path(p).read_bytes()).hexdigest()
                    out[p] = ("file", st.st_mode, st.st_ino, st.st_size, digest)
                else:
                    out[p] = ("other", st.st_mode)
    return out


# --- did anything reach the client? --------------------------------------------------------


def result_payload(result: Any) -> str:
    """Everything a client received, as one searchable string (binary blocks decoded)."""
    parts: list[str] = []
    for block in getattr(result, "content", []) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "image":
            parts.append(base64.b64decode(block.data).decode("latin-1"))
        elif kind == "resource":
            res = block.resource
            parts.append(str(getattr(res, "uri", "")))
            if getattr(res, "blob", None):
                parts.append(base64.b64decode(res.blob).decode("latin-1"))
            if getattr(res, "text", None):
                parts.append(res.text)
        else:
            parts.append(repr(block))
    structured = getattr(result, "structured_content", None)
    if structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)


def leaks(result: Any) -> set[str]:
    payload = result_payload(result)
    return {c for c in (OUTSIDE_CANARY, SECRET_CANARY, LISTING_MARKER) if c in payload}
