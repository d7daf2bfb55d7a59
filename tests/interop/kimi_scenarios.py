"""The differential scenarios: one tree, one list of tool calls, run through Kimi CLI twice.

The tree is rebuilt byte for byte (and mtime for mtime) at the same absolute path before each
run, and the calls run in order in one Kimi session, so both runs see the same files — writes
included — and any difference in a result is a difference of the tools.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

# Fixed mtimes, oldest first, so Grep's newest-first order is the same in both runs.
BASE_MTIME = 1_700_000_000


@dataclass(frozen=True)
class Scenario:
    id: str
    tool: str
    args: dict[str, Any]


def build_tree(root: Path) -> None:
    """The workspace ``root/w`` and a directory beside it, ``root/outside``."""
    if root.exists():
        shutil.rmtree(root)
    w = root / "w"
    files: dict[str, bytes] = {
        "a.txt": b"hello\nworld\n",
        "empty.txt": b"",
        "crlf.txt": b"one\r\ntwo\r\nthree\r\n",
        "noeol.txt": b"no newline at end",
        "bad.txt": b"ok \xff\xfe bytes\nsecond\n",
        "bom.txt": b"\xef\xbb\xbfbom line\nnext\n",
        "mac.txt": b"first\rsecond\rthird\r",
        "utf16.txt": "utf16 text\nline two\n".encode("utf-16"),
        "long.txt": "".join(f"line {i}\n" for i in range(1, 1501)).encode(),
        "wide.txt": b"short\n" + b"x" * 2500 + b"\nend\n",
        "big.txt": "".join(f"{i:05d} " + "y" * 150 + "\n" for i in range(1, 1201)).encode(),
        # 122 lines of 1,001 bytes: a tail of all of them meets the byte cap and the budget.
        "wide122.txt": "".join(f"{i:04d}" + "w" * 996 + "\n" for i in range(1, 123)).encode(),
        "tabs.txt": b"col1\tcol2\n\tindented\n",
        "dup.txt": b"foo\nbar\nfoo\nbaz\nfoo\n",
        "edit1.txt": b"alpha\nbeta\ngamma\n",
        "edit2.txt": b"one two one two\n",
        "edit3.txt": b"x = 1\r\ny = 2\r\n",
        "edit4.txt": b"keep\nchange me\nkeep\n",
        "edit5.txt": b"a\nb\nc\n",
        "app.log": b"log line error\n",
        "data.bin": bytes(range(256)) * 4,
        "fake.png": b"this is text in a png name\n",
        "notes.md": b"# Notes\nTODO: write more\nerror handling\n",
        ".env": b"API_KEY=kimi-canary-123\n",
        ".gitignore": b"build/\n*.log\n",
        ".hidden/h.txt": b"hidden hello\n",
        "build/out.txt": b"built hello\n",
        "src/main.py": b"import pkg\n\ndef main():\n    print('hello')\n    return 0\n",
        "src/pkg/__init__.py": b"",
        "src/pkg/mod.py": b"def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n",
        "src/pkg/util.py": b"# util\nERROR = 'error'\ndef helper():\n    raise ValueError('error here')\n",
        "src/README.md": b"src readme hello\n",
        "docs/guide.md": b"Guide\n=====\nhello guide\nError: none\n",
        "docs/notes.txt": b"notes\nmore notes\n",
        "tests/test_mod.py": b"from pkg.mod import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        "deep/a/b/c/d/e.txt": b"deep hello\n",
        "many/placeholder": b"",
    }
    for i in range(30):
        files[f"many/f{i:02d}.txt"] = f"match {i}\nother\nmatch again {i}\n".encode()
    (root / "outside").mkdir(parents=True)
    (root / "outside" / "o.txt").write_bytes(b"outside file\nhello outside\n")
    for rel, data in files.items():
        p = w / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    images(w / "img")
    for i, p in enumerate(sorted(x for x in w.rglob("*") if x.is_file())):
        t = BASE_MTIME + 60 * i
        os.utime(p, (t, t))


def images(d: Path) -> None:
    d.mkdir(parents=True)
    im = Image.new("RGB", (40, 30))
    for x in range(40):
        for y in range(30):
            im.putpixel((x, y), (x * 6, y * 8, 100))
    im.save(d / "pic.png", optimize=False)
    im.save(d / "photo.jpg", quality=80)
    Image.new("RGBA", (16, 16), (255, 0, 0, 128)).save(d / "alpha.png")
    frames = [Image.new("P", (20, 20), i) for i in range(3)]
    frames[0].save(d / "anim.gif", save_all=True, append_images=frames[1:], duration=50)
    im.save(d / "pic.webp")
    (d / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    # An MP4 no decoder opens: a bare `ftyp` box and zeros (4 KB), no `moov`, no frames.
    (d / "bare.mp4").write_bytes((b"\0\0\0\x18ftypisom\0\0\x02\0isommp41").ljust(4096, b"\0"))


def scenarios(root: Path) -> list[Scenario]:
    """The calls, in order. ``root`` is where the tree is built (for absolute paths)."""
    w = root / "w"
    out = root / "outside"
    s: list[Scenario] = []

    def add(tool: str, **args: Any) -> None:
        s.append(Scenario(f"{len(s):03d}-{tool}", tool, args))

    # --- ReadFile ---------------------------------------------------------------------------
    for path in ["a.txt", "empty.txt", "crlf.txt", "noeol.txt", "bad.txt", "bom.txt", "tabs.txt"]:
        add("ReadFile", path=path)
    add("ReadFile", path="mac.txt")
    add("ReadFile", path="utf16.txt")
    add("ReadFile", path="long.txt")
    add("ReadFile", path="long.txt", line_offset=1001)
    add("ReadFile", path="long.txt", line_offset=1490, n_lines=5)
    add("ReadFile", path="long.txt", line_offset=1500)
    add("ReadFile", path="long.txt", line_offset=1501)
    add("ReadFile", path="long.txt", line_offset=5000)
    add("ReadFile", path="long.txt", line_offset=-3)
    add("ReadFile", path="long.txt", line_offset=-1000)
    add("ReadFile", path="long.txt", line_offset=-1001)
    add("ReadFile", path="long.txt", line_offset=0)
    add("ReadFile", path="long.txt", n_lines=0)
    add("ReadFile", path="long.txt", n_lines=5000)
    add("ReadFile", path="long.txt", line_offset=10, n_lines=3)
    add("ReadFile", path="a.txt", line_offset=-5)
    add("ReadFile", path="wide.txt")
    add("ReadFile", path="big.txt")
    add("ReadFile", path="big.txt", line_offset=600)
    # Issue 24.1 (SPEC §4 ReadFile: every reason named): the byte cap and the budget both cut.
    add("ReadFile", path="wide122.txt", line_offset=-122)
    add("ReadFile", path="missing.txt")
    add("ReadFile", path="src")
    add("ReadFile", path="")
    add("ReadFile", path="../outside/o.txt")
    add("ReadFile", path=str(out / "o.txt"))
    add("ReadFile", path=str(w / "a.txt"))
    add("ReadFile", path="img/pic.png")
    add("ReadFile", path="fake.png")
    add("ReadFile", path="data.bin")
    add("ReadFile", path=".env")
    add("ReadFile", path="src/pkg/mod.py", line_offset=2, n_lines=2)
    add("ReadFile", path="./src/main.py")
    add("ReadFile", path="src/../a.txt")
    add("ReadFile", path=".hidden/h.txt")

    # --- ReadMediaFile ----------------------------------------------------------------------
    for path in ["img/pic.png", "img/photo.jpg", "img/alpha.png", "img/anim.gif", "img/pic.webp"]:
        add("ReadMediaFile", path=path)
    add("ReadMediaFile", path="img/broken.png")
    # Issue 24.2 (SPEC §4 ReadMediaFile: a video that fits is sent; only undecodable images are
    # refused; an optional install, PyAV here, must not change the answer for a file that fits).
    add("ReadMediaFile", path="img/bare.mp4")
    add("ReadMediaFile", path="fake.png")
    add("ReadMediaFile", path="a.txt")
    add("ReadMediaFile", path="empty.txt")
    add("ReadMediaFile", path="data.bin")
    add("ReadMediaFile", path="missing.png")
    add("ReadMediaFile", path="img")
    add("ReadMediaFile", path="")
    add("ReadMediaFile", path="../outside/o.txt")

    # --- Glob -------------------------------------------------------------------------------
    for pattern in [
        "*.txt",
        "*.md",
        "src/*.py",
        "src/**/*.py",
        "**/*.py",
        "*",
        "src/**",
        "*.{md,log}",
        "src/pkg/?od.py",
        "src/pkg/[mu]*.py",
        "nothing*",
        "docs/*",
        "deep/**/e.txt",
        ".hidden/*",
        "many/*.txt",
        ".*",
        "img/*.png",
        "**",
    ]:
        add("Glob", pattern=pattern)
    add("Glob", pattern="*.py", directory=str(w / "src"))
    add("Glob", pattern="*.py", directory=str(w / "src"), include_dirs=False)
    add("Glob", pattern="*", include_dirs=False)
    add("Glob", pattern="src/*", include_dirs=False)
    add("Glob", pattern="*.txt", directory="src")
    add("Glob", pattern="*.txt", directory=str(out))
    add("Glob", pattern="*.txt", directory=str(w / "missing"))
    add("Glob", pattern="*.txt", directory=str(w / "a.txt"))
    add("Glob", pattern="../*")
    add("Glob", pattern=str(w / "*.txt"))
    add("Glob", pattern="")
    add("Glob", pattern="src/**/")

    # --- Grep -------------------------------------------------------------------------------
    add("Grep", pattern="hello")
    add("Grep", pattern="hello", output_mode="content")
    add("Grep", pattern="hello", output_mode="count_matches")
    add("Grep", pattern="HELLO", **{"-i": True})
    add("Grep", pattern="HELLO", output_mode="content", **{"-i": True})
    add("Grep", pattern="error", output_mode="content", **{"-n": False})
    add("Grep", pattern="error", output_mode="content", path="src")
    add("Grep", pattern="error", path="src")
    add("Grep", pattern="error", output_mode="count_matches", path="src")
    add("Grep", pattern="return", output_mode="content", path="src/pkg/mod.py")
    add("Grep", pattern="return", output_mode="content", path="src/pkg/mod.py", **{"-C": 1})
    add("Grep", pattern="return", output_mode="content", path="src/pkg/mod.py", **{"-A": 1})
    add("Grep", pattern="return", output_mode="content", path="src/pkg/mod.py", **{"-B": 2})
    add("Grep", pattern="def", output_mode="content", glob="*.py")
    add("Grep", pattern="def", glob="**/mod.py")
    add("Grep", pattern="def", type="py")
    add("Grep", pattern="hello", type="md", output_mode="content")
    add("Grep", pattern="match", path="many", output_mode="content", head_limit=10)
    add("Grep", pattern="match", path="many", output_mode="content", head_limit=10, offset=10)
    add("Grep", pattern="match", path="many", output_mode="content", head_limit=0)
    add("Grep", pattern="match", path="many", output_mode="content", offset=1000)
    add("Grep", pattern="match", path="many", head_limit=5)
    add("Grep", pattern="match", path="many", output_mode="count_matches", head_limit=5)
    add("Grep", pattern="def add.*\\n.*return", multiline=True, output_mode="content")
    add("Grep", pattern="nomatchanywhere")
    add("Grep", pattern="(unclosed")
    add("Grep", pattern="hello", path="missing")
    add("Grep", pattern="hello", path="../outside")
    add("Grep", pattern="hello", path=str(out))
    add("Grep", pattern="hello", path=str(w / "a.txt"), output_mode="content")
    add("Grep", pattern="built")
    add("Grep", pattern="built", include_ignored=True)
    add("Grep", pattern="canary")
    add("Grep", pattern="API_KEY", output_mode="content")
    add("Grep", pattern="hidden")
    add("Grep", pattern="hello", output_mode="bogus")
    add("Grep", pattern="line 14\\d\\d", path="long.txt", output_mode="count_matches")
    add("Grep", pattern="y{150}", path="big.txt", output_mode="content", head_limit=3)
    add("Grep", pattern="TODO", output_mode="content", **{"-C": 5})
    # Issue 24.3 (SPEC §4 Grep: lines <= 2,000 characters, marker included, as Kimi cuts).
    add("Grep", pattern="x{100}", output_mode="content")

    # --- WriteFile --------------------------------------------------------------------------
    # SPEC §4 "Read before you change it": these create or append (no read needed); the
    # overwrites of new1.txt follow a ReadFile of it, and then its own write.
    add("WriteFile", path="new1.txt", content="fresh file\n")
    add("ReadFile", path="new1.txt")
    add("WriteFile", path="new1.txt", content="more\n", mode="append")
    add("ReadFile", path="new1.txt")
    add("WriteFile", path="new1.txt", content="replaced\n")
    add("ReadFile", path="new1.txt")
    add("WriteFile", path="new1.txt", content="replaced\n")
    add("WriteFile", path="new2.txt", content="")
    add("WriteFile", path="nodir/x.txt", content="x\n")
    add("WriteFile", path="made/dir/x.txt", content="x\n", create_dirs=True)
    add("WriteFile", path="crlf.txt", content="tail\r\n", mode="append")
    add("ReadFile", path="crlf.txt")
    add("WriteFile", path="src", content="x")
    add("WriteFile", path="", content="x")
    add("WriteFile", path="../outside/w.txt", content="x\n")
    add("WriteFile", path=str(w / "abs.txt"), content="absolute inside\n")
    add("WriteFile", path="new3.txt", content="x", mode="bogus")
    add("WriteFile", path="unicode.txt", content="héllo wörld ✓\n")
    add("ReadFile", path="unicode.txt")
    add("WriteFile", path="multi.txt", content="a\nb\nc\nd\n")
    add("Grep", pattern="fresh|replaced|absolute", output_mode="content")

    # --- StrReplaceFile ---------------------------------------------------------------------
    # SPEC §4 "Read before you change it": filegate (--client kimi keeps the guard on) refuses an
    # edit of a file not read, so every file is read before its first edit (Kimi CLI 1.51 has no
    # such rule, so the reads change nothing there). Later edits follow edits (a write counts as
    # a read). a.txt is edited by absolute path after the ReadFile of a.txt at the top.
    add("ReadFile", path="edit1.txt")  # read before you change it (SPEC §4)
    add("StrReplaceFile", path="edit1.txt", edit={"old": "beta", "new": "BETA"})
    add("ReadFile", path="edit1.txt")
    add("StrReplaceFile", path="edit1.txt", edit=[{"old": "alpha", "new": "A"}, {"old": "gamma", "new": "G"}])
    add("ReadFile", path="edit1.txt")
    add("ReadFile", path="edit2.txt")  # read before you change it (SPEC §4)
    add("StrReplaceFile", path="edit2.txt", edit={"old": "one", "new": "1", "replace_all": True})
    add("ReadFile", path="edit2.txt")
    add("StrReplaceFile", path="edit2.txt", edit={"old": "two", "new": "2"})
    add("StrReplaceFile", path="edit2.txt", edit={"old": "absent", "new": "x"})
    add("StrReplaceFile", path="edit2.txt", edit={"old": "", "new": "x"})
    add("StrReplaceFile", path="edit2.txt", edit={"old": "1", "new": "1"})
    add("ReadFile", path="edit3.txt")  # read before you change it (SPEC §4)
    add("StrReplaceFile", path="edit3.txt", edit={"old": "x = 1\ny = 2", "new": "x = 10\ny = 20"})
    add("ReadFile", path="edit3.txt")
    add("StrReplaceFile", path="edit3.txt", edit={"old": "y = 20", "new": "y = 21"})
    add("ReadFile", path="edit4.txt")  # read before you change it (SPEC §4)
    add("StrReplaceFile", path="edit4.txt", edit={"old": "change me", "new": "changed"})
    add("StrReplaceFile", path="edit4.txt", edit=[{"old": "keep", "new": "K", "replace_all": True}])
    add("ReadFile", path="edit4.txt")
    add("ReadFile", path="edit5.txt")  # read before you change it (SPEC §4)
    add("StrReplaceFile", path="edit5.txt", edit=[{"old": "a", "new": "A"}, {"old": "zzz", "new": "Z"}])
    add("ReadFile", path="edit5.txt")
    add("StrReplaceFile", path="missing.txt", edit={"old": "a", "new": "b"})
    add("StrReplaceFile", path="src", edit={"old": "a", "new": "b"})
    add("StrReplaceFile", path="", edit={"old": "a", "new": "b"})
    add("StrReplaceFile", path="../outside/o.txt", edit={"old": "outside", "new": "x"})
    add("ReadFile", path="bad.txt")  # read before you change it (SPEC §4)
    add("StrReplaceFile", path="bad.txt", edit={"old": "second", "new": "2nd"})
    add("ReadFile", path="bad.txt")
    add("ReadFile", path="bom.txt")  # read before you change it (SPEC §4)
    add("StrReplaceFile", path="bom.txt", edit={"old": "next", "new": "NEXT"})
    add("ReadFile", path="bom.txt")
    add("ReadFile", path="dup.txt")  # read before you change it (SPEC §4)
    add("StrReplaceFile", path="dup.txt", edit={"old": "foo", "new": "FOO"})
    add("StrReplaceFile", path="dup.txt", edit={"old": "foo", "new": "FOO", "replace_all": True})
    add("ReadFile", path="dup.txt")
    add("ReadFile", path="src/pkg/mod.py")  # read before you change it (SPEC §4)
    add("StrReplaceFile", path="src/pkg/mod.py", edit={"old": "a + b", "new": "b + a"})
    add("Grep", pattern="b \\+ a", output_mode="content")
    add("StrReplaceFile", path=str(w / "a.txt"), edit={"old": "world", "new": "there"})
    add("ReadFile", path="a.txt")
    add("Glob", pattern="*.txt")
    return s


Builder = Callable[[Path], None]
