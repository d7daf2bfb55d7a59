"""Glob through a real MCP client, both protocol eras, real directory trees."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import call, connect, text, texts


def tree(root: Path, *files: str) -> None:
    for f in files:
        p = root / f
        p.parent.mkdir(parents=True, exist_ok=True)
        if not f.endswith("/"):
            p.write_text(f)


async def glob(ws: Path, mode: str, **args: object) -> tuple[bool, list[str], dict | None]:
    async with connect(ws, mode) as c:
        r = await call(c, "Glob", **args)
        return r.is_error, texts(r), r.structured_content


async def test_stars_globstar_and_braces(ws: Path, mode: str) -> None:
    tree(ws, "a.py", "b.md", "c.txt", "src/x.py", "src/deep/er/y.py", "src/z.js", ".hidden/h.py")
    _, (out, msg), facts = await glob(ws, mode, pattern="*.py")
    assert out == "a.py" and msg == "Found 1 matches for pattern `*.py`."
    _, (out, _), _ = await glob(ws, mode, pattern="src/**/*.py")
    assert out.split("\n") == ["src/deep/er/y.py", "src/x.py"]
    _, (out, _), _ = await glob(ws, mode, pattern="*.{py,md}")
    assert out.split("\n") == ["a.py", "b.md"]
    _, (out, _), _ = await glob(ws, mode, pattern="{src,.hidden}/*.py")
    assert out.split("\n") == [".hidden/h.py", "src/x.py"]
    _, (out, _), _ = await glob(ws, mode, pattern="src/**")
    assert out.split("\n") == ["src/deep", "src/deep/er", "src/deep/er/y.py", "src/x.py", "src/z.js"]
    _, (out, _), facts = await glob(ws, mode, pattern="src/**", include_dirs=False)
    assert out.split("\n") == ["src/deep/er/y.py", "src/x.py", "src/z.js"]
    assert facts == {"matches": 3, "truncated": False, "skipped_sensitive": 0}


async def test_no_match_message(ws: Path, mode: str) -> None:
    err, parts, _ = await glob(ws, mode, pattern="*.rs")
    assert not err and parts == ["No matches found for pattern `*.rs`."]


async def test_leading_globstar_is_refused_with_a_listing(ws: Path, mode: str) -> None:
    tree(ws, "src/a.py", "README.md")
    for pattern in ("**/*.py", "./**/*.py", "**"):
        err, parts, _ = await glob(ws, mode, pattern=pattern)
        assert err and f"Pattern `{pattern}` starts with '**' which is not allowed." in parts[0]
        assert parts[1] == "├── src/\n│   └── a.py\n└── README.md"


async def test_patterns_cannot_escape_or_be_absolute(ws: Path, outside: Path, mode: str) -> None:
    for pattern in ("../*", "src/../../*", "../outside/*"):
        err, parts, _ = await glob(ws, mode, pattern=pattern)
        assert err and "leaves the search directory" in parts[0] and "secret.txt" not in "".join(parts)
    err, parts, _ = await glob(ws, mode, pattern=str(outside) + "/*")
    assert err and "is absolute" in parts[0]


async def test_directory_must_be_absolute_and_inside(ws: Path, outside: Path, mode: str) -> None:
    tree(ws, "sub/a.txt")
    err, parts, _ = await glob(ws, mode, pattern="*", directory="sub")
    assert err and parts[0] == "`sub` is not an absolute path. You must provide an absolute path to search."
    err, parts, _ = await glob(ws, mode, pattern="*", directory=str(outside))
    assert err and "is outside the workspace" in parts[0]
    evil = Path(str(ws) + "-evil")
    evil.mkdir()
    err, parts, _ = await glob(ws, mode, pattern="*", directory=str(evil))
    assert err and "is outside the workspace" in parts[0]
    err, parts, _ = await glob(ws, mode, pattern="*", directory=str(ws / "sub" / "a.txt"))
    assert err and "is not a directory" in parts[0]
    err, parts, _ = await glob(ws, mode, pattern="*", directory=str(ws / "nope"))
    assert err and "does not exist" in parts[0]
    err, (out, _), _ = await glob(ws, mode, pattern="*", directory=str(ws / "sub"))
    assert not err and out == "a.txt"


async def test_symlinked_directories_pointing_out_are_not_walked(ws: Path, outside: Path, mode: str) -> None:
    tree(ws, "real/in.txt")
    (ws / "out").symlink_to(outside)
    (ws / "alias").symlink_to(ws / "real")
    (ws / "real" / "loop").symlink_to(ws / "real")
    _, (out, _), _ = await glob(ws, mode, pattern="*/*.txt")
    assert out.split("\n") == ["alias/in.txt", "real/in.txt"]
    _, (out, _), _ = await glob(ws, mode, pattern="real/**")
    assert "secret.txt" not in out and out.split("\n") == ["real/in.txt", "real/loop"]


async def test_sensitive_files_are_left_out_and_counted(ws: Path, mode: str) -> None:
    tree(ws, ".env", "conf/.env.local", "conf/app.ini", "key.pem", ".env.example")
    (ws / "innocent").symlink_to(ws / "key.pem")
    _, (out, msg), facts = await glob(ws, mode, pattern="*", include_dirs=False)
    assert out.split("\n") == [".env.example"]
    assert "Skipped 3 sensitive file(s) (.env, innocent, key.pem)" in msg
    assert facts and facts["skipped_sensitive"] == 3


async def test_at_most_1000_results_and_an_early_stop(ws: Path, mode: str) -> None:
    d = ws / "many"
    d.mkdir()
    for i in range(1500):
        (d / f"f{i:05d}.txt").write_bytes(b"")
    _, (out, msg), facts = await glob(ws, mode, pattern="many/*.txt")
    names = out.split("\n")
    assert len(names) == 1000 and names[0] == "many/f00000.txt" and names[-1] == "many/f00999.txt"
    assert "Only the first 1000 matches are returned." in msg
    assert facts and facts["truncated"]


async def test_unreadable_directory_is_skipped_and_said(ws: Path, mode: str) -> None:
    tree(ws, "locked/x.txt", "open/y.txt")
    os.chmod(ws / "locked", 0)
    try:
        async with connect(ws, mode) as c:
            r = await call(c, "Glob", pattern="*/*.txt")
        if os.geteuid() == 0:  # root reads everything: the walk simply sees both
            assert "locked/x.txt" in text(r)
        else:
            assert "open/y.txt" in text(r) and "unreadable" in text(r)
    finally:
        os.chmod(ws / "locked", 0o755)
