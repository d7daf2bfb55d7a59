"""Glob through a real MCP client, both protocol eras, real directory trees."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

import filegate.tools.glob as glob_module
from filegate.tools.search.ignores import MAX_RULES_BYTES
from tests.conftest import FILEGATE, MODES_LEGACY_SLOW, call, connect, stdio_transport, text, texts


@pytest.fixture(params=MODES_LEGACY_SLOW)
def mode(request: pytest.FixtureRequest) -> str:
    """Both eras; the handshake-era twin in the slow set (tests/conftest.py says why)."""
    return str(request.param)


def tree(root: Path, *files: str) -> None:
    for f in files:
        p = root / f
        if f.endswith("/"):
            p.mkdir(parents=True, exist_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(f)


async def glob(
    ws: Path, mode: str, budget: int | None = None, **args: object
) -> tuple[bool, list[str], None]:
    async with connect(ws, mode, result_budget=budget) as c:
        r = await call(c, "Glob", **args)
        assert r.structured_content is None  # text only (SPEC §1)
        return r.is_error, texts(r), None


async def test_stars_globstar_and_braces(ws: Path, mode: str) -> None:
    tree(ws, "a.py", "b.md", "c.txt", "src/x.py", "src/deep/er/y.py", "src/z.js", ".hidden/h.py")
    _, (out, msg), facts = await glob(ws, mode, pattern="*.py")
    assert out == "a.py\n" and msg == "Found 1 matches for pattern `*.py`."
    _, (out, _), _ = await glob(ws, mode, pattern="src/**/*.py")
    assert out.splitlines() == ["src/deep/er/y.py", "src/x.py"]
    _, (out, _), _ = await glob(ws, mode, pattern="*.{py,md}")
    assert out.splitlines() == ["a.py", "b.md"]
    _, (out, _), _ = await glob(ws, mode, pattern="{src,.hidden}/*.py")
    assert out.splitlines() == [".hidden/h.py", "src/x.py"]
    _, (out, _), _ = await glob(ws, mode, pattern="src/**")
    assert out.splitlines() == ["src/deep", "src/deep/er", "src/deep/er/y.py", "src/x.py", "src/z.js"]
    _, (out, msg), _ = await glob(ws, mode, pattern="src/**", include_dirs=False)
    assert out == "src/deep/er/y.py\nsrc/x.py\nsrc/z.js\n" and msg == "Found 3 matches for pattern `src/**`."


async def test_no_match_message(ws: Path, mode: str) -> None:
    err, parts, _ = await glob(ws, mode, pattern="*.rs")
    assert not err and parts == ["No matches found for pattern `*.rs`."]


async def test_leading_globstar_is_allowed(ws: Path, mode: str) -> None:
    """SPEC §4 (issue 11.6): `**`, `**/…` and `./**/…` walk the whole directory (was refused
    with a listing that showed `.env` and `id_rsa`, issue 10.8)."""
    tree(ws, "src/a.py", "README.md", "deep/er/b.py", ".env", "keys/id_rsa", "keys/id_rsa.pub")
    for pattern in ("**/*.py", "./**/*.py"):
        err, (out, msg), _ = await glob(ws, mode, pattern=pattern)
        assert not err and out.splitlines() == ["deep/er/b.py", "src/a.py"]
        assert msg == f"Found 2 matches for pattern `{pattern}`."
    err, (out, msg), _ = await glob(ws, mode, pattern="**")
    assert not err and out.splitlines() == [
        "README.md", "deep", "deep/er", "deep/er/b.py", "keys", "keys/id_rsa.pub", "src", "src/a.py"
    ]  # fmt: skip
    assert msg == (
        "Found 8 matches for pattern `**`. Skipped 2 sensitive file(s) (.env, id_rsa) to protect "
        "secrets. These files may contain credentials or private keys."
    )


async def test_leading_globstar_stops_at_the_cap(ws: Path, mode: str) -> None:
    for d in range(3):
        (ws / f"d{d}").mkdir()
        for i in range(600):
            (ws / f"d{d}" / f"f{i:04d}.txt").write_bytes(b"")
    err, (out, msg), _ = await glob(ws, mode, pattern="**/*.txt")
    names = out.splitlines()
    assert not err and len(names) == 1000 and names[0] == "d0/f0000.txt" and names[-1] == "d1/f0399.txt"
    assert msg == (
        "Found more than 1000 matches for pattern `**/*.txt`. Only the first 1000 matches are "
        "returned. You may want to use a more specific pattern. Use offset=1000 to see more."  # SPEC §8.7
    )


async def test_trailing_slash_matches_directories_only(ws: Path, mode: str) -> None:
    tree(ws, "src/pkg/mod.py", "src/pkg/data/", "src/file.txt", "top.txt", "other/")
    (ws / "src" / "dirlink").symlink_to(ws / "src" / "pkg")
    (ws / "src" / "filelink").symlink_to(ws / "top.txt")
    _, (out, _), _ = await glob(ws, mode, pattern="src/**/")
    assert out.splitlines() == ["src/dirlink", "src/pkg", "src/pkg/data"]
    _, (out, _), _ = await glob(ws, mode, pattern="*/")
    assert out.splitlines() == ["other", "src"]
    _, (out, _), _ = await glob(ws, mode, pattern="{src,top.txt}/")
    assert out == "src\n"
    _, (out, _), _ = await glob(ws, mode, pattern="src/*")  # no slash: files and directories
    assert out.splitlines() == ["src/dirlink", "src/file.txt", "src/filelink", "src/pkg"]


async def test_empty_pattern_is_an_error(ws: Path, mode: str) -> None:
    tree(ws, "a.txt")
    err, parts, _ = await glob(ws, mode, pattern="")
    assert err and parts == ["Pattern cannot be empty."]


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
    assert not err and out == "a.txt\n"


async def test_symlinked_directories_pointing_out_are_not_walked(ws: Path, outside: Path, mode: str) -> None:
    tree(ws, "real/in.txt")
    (ws / "out").symlink_to(outside)
    (ws / "alias").symlink_to(ws / "real")
    (ws / "real" / "loop").symlink_to(ws / "real")
    _, (out, _), _ = await glob(ws, mode, pattern="*/*.txt")
    assert out.splitlines() == ["alias/in.txt", "real/in.txt"]
    _, (out, _), _ = await glob(ws, mode, pattern="real/**")
    assert "secret.txt" not in out and out.splitlines() == ["real/in.txt", "real/loop"]
    # `**` lists a symlink but never walks through one (no cycles, no way out)
    _, (out, _), _ = await glob(ws, mode, pattern="**")
    assert out.splitlines() == ["alias", "out", "real", "real/in.txt", "real/loop"]


async def test_sensitive_files_are_left_out_and_counted(ws: Path, mode: str) -> None:
    tree(ws, ".env", "conf/.env.local", "conf/app.ini", "key.pem", ".env.example")
    (ws / "innocent").symlink_to(ws / "key.pem")
    _, (out, msg), _ = await glob(ws, mode, pattern="*", include_dirs=False)
    assert out == ".env.example\n"
    assert msg == (
        "Found 1 matches for pattern `*`. Skipped 3 sensitive file(s) (.env, innocent, key.pem) "
        "to protect secrets. These files may contain credentials or private keys."
    )


async def test_at_most_1000_results_and_an_early_stop(ws: Path, mode: str) -> None:
    d = ws / "many"
    d.mkdir()
    for i in range(1500):
        (d / f"f{i:05d}.txt").write_bytes(b"")
    _, (out, msg), _ = await glob(ws, mode, pattern="many/*.txt")
    names = out.splitlines()
    assert len(names) == 1000 and names[0] == "many/f00000.txt" and names[-1] == "many/f00999.txt"
    assert "Only the first 1000 matches are returned." in msg


def without_dac_override(ws: Path, mode: str) -> Any:
    """A client on a server that permission bits apply to. Root reads every directory
    (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH), so as root the server is a real process started
    by util-linux's ``setpriv`` with those two capabilities dropped from its bounding and
    inheritable sets: still uid 0 (it can run the interpreter under /root), but a mode-0
    directory is unreadable to it as to any user. Not a skip: without setpriv the test fails."""
    if os.geteuid() != 0:
        return connect(ws, mode)
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to check this as root"
    dropped = ["--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--"]
    args = [*dropped, FILEGATE, "--workdir", str(ws)]
    return Client(StdioTransport(setpriv, args, cwd=str(ws), keep_alive=False), mode=mode)


@pytest.mark.slow
async def test_unreadable_directory_is_skipped_and_said(ws: Path, mode: str) -> None:
    tree(ws, "locked/x.txt", "open/y.txt", "shut/z.txt")
    os.chmod(ws / "locked", 0)
    try:
        async with without_dac_override(ws, mode) as c:
            r = await call(c, "Glob", pattern="*/*.txt")
            os.chmod(ws / "shut", 0)
            two = await call(c, "Glob", pattern="*/*.txt")
    finally:
        os.chmod(ws / "locked", 0o755)
        os.chmod(ws / "shut", 0o755)
    assert not r.is_error and texts(r) == [
        "open/y.txt\nshut/z.txt\n",
        "Found 2 matches for pattern `*/*.txt`. 1 unreadable directory skipped.",
    ]
    assert texts(two) == [
        "open/y.txt\n",
        "Found 1 matches for pattern `*/*.txt`. 2 unreadable directories skipped.",
    ]


# --- VCS folders and .gitignore (SPEC §4 Glob, issue 11.6) ---------------------------------


def ignoring_repo(ws: Path) -> None:
    tree(ws, "src/app.py", "src/app.log", "src/keep.log", "build/out.py", "node_modules/lib/x.js",
         "sub/gen.py", "sub/hand.py", "notes.tmp", ".git/HEAD", ".git/hooks/pre-commit.py",
         ".hg/store/data.py", ".svn/entries")  # fmt: skip
    (ws / ".gitignore").write_text("# comment\nbuild/\nnode_modules\n*.log\n!keep.log\n")
    (ws / "sub" / ".gitignore").write_text("/gen.py\n")
    (ws / ".git" / "info").mkdir()
    (ws / ".git" / "info" / "exclude").write_text("*.tmp\n")


async def test_vcs_folders_and_gitignored_paths_are_skipped(ws: Path, mode: str) -> None:
    ignoring_repo(ws)
    _, (out, msg), _ = await glob(ws, mode, pattern="**", include_dirs=False)
    assert out.splitlines() == [".gitignore", "src/app.py", "src/keep.log", "sub/.gitignore", "sub/hand.py"]
    # build/, node_modules/, notes.tmp, src/app.log, sub/gen.py: said, so the model can ask again
    assert "5 path(s) ignored by .gitignore were not searched (include_ignored=true searches them)." in msg
    _, (out, _), _ = await glob(ws, mode, pattern="*")
    assert out.splitlines() == [".gitignore", "src", "sub"]


async def test_include_ignored_shows_ignored_paths_but_not_vcs_folders(ws: Path, mode: str) -> None:
    ignoring_repo(ws)
    _, (out, _), _ = await glob(ws, mode, pattern="**/*.py", include_ignored=True)
    assert out.splitlines() == ["build/out.py", "src/app.py", "sub/gen.py", "sub/hand.py"]
    _, (out, _), _ = await glob(ws, mode, pattern="**/*.{log,tmp}", include_ignored=True)
    assert out.splitlines() == ["notes.tmp", "src/app.log", "src/keep.log"]


async def test_a_pattern_naming_an_ignored_directory_walks_it(ws: Path, mode: str) -> None:
    ignoring_repo(ws)
    tree(ws, ".venv/lib/python3.11/site-packages/site.py", ".venv/bin/python.py")
    (ws / ".venv" / ".gitignore").write_text("*\n")  # what `python -m venv` writes
    _, (out, _), _ = await glob(ws, mode, pattern="build/*.py")
    assert out == "build/out.py\n"
    _, (out, _), _ = await glob(ws, mode, pattern="node_modules/**/*.js")
    assert out == "node_modules/lib/x.js\n"
    _, (out, _), _ = await glob(ws, mode, pattern=".venv/**/site.py")
    assert out == ".venv/lib/python3.11/site-packages/site.py\n"
    _, (out, _), _ = await glob(ws, mode, pattern="sub/gen.py")
    assert out == "sub/gen.py\n"
    _, (out, _), _ = await glob(ws, mode, pattern=".git/hooks/*")
    assert out == ".git/hooks/pre-commit.py\n"
    _, (out, _), _ = await glob(ws, mode, pattern="*/*.py")  # a wildcard does not name them
    assert out.splitlines() == ["src/app.py", "sub/hand.py"]
    # below the named part, the rules apply again
    tree(ws, "src/.git/config.py", "src/deep/x.log", "src/deep/y.py")
    _, (out, _), _ = await glob(ws, mode, pattern="src/**", include_dirs=False)
    assert out.splitlines() == ["src/app.py", "src/deep/y.py", "src/keep.log"]


async def test_gitignore_above_the_searched_directory_applies(ws: Path, mode: str) -> None:
    ignoring_repo(ws)
    err, (out, _), _ = await glob(ws, mode, pattern="*", directory=str(ws / "src"))
    assert not err and out.splitlines() == ["app.py", "keep.log"]
    err, (out, _), _ = await glob(ws, mode, pattern="*.py", directory=str(ws / "build"))
    assert not err and out == "out.py\n"  # the caller named it as `directory`
    # ... also when the rule ignores what is inside it, or a folder on the way, or it says `*`
    tree(ws, "gen/deep/x.py", "venv/lib/y.py")
    with (ws / ".gitignore").open("a") as f:
        f.write("gen/**\n")
    (ws / "venv" / ".gitignore").write_text("*\n")
    for directory, found in (("gen", "deep/x.py"), ("gen/deep", "x.py"), ("venv", "lib/y.py")):
        err, (out, _), _ = await glob(ws, mode, pattern="**/*.py", directory=str(ws / directory))
        assert not err and out == found + "\n"
    _, (out, _), _ = await glob(ws, mode, pattern="**/*.py")  # named by nobody: left out
    assert out.splitlines() == ["src/app.py", "sub/hand.py"]


async def test_a_hostile_gitignore_is_not_read(ws: Path, outside: Path, mode: str) -> None:
    """A repository chooses its ignore files (issue 18.1): a symlink (to /dev/zero, to a file
    outside, to a secret), a FIFO or an oversized file is not honoured, and never hangs."""
    tree(ws, "a/x.py", "b/x.py", "c/x.py", "d/x.py", ".env")
    (outside / "rules").write_text("x.py\n")
    (ws / ".env").write_text("x.py\n")
    (ws / "a" / ".gitignore").symlink_to("/dev/zero")
    (ws / "b" / ".gitignore").symlink_to(outside / "rules")
    (ws / "c" / ".gitignore").symlink_to(ws / ".env")
    os.mkfifo(ws / "d" / ".gitignore")
    (ws / ".gitignore").write_text("*.py\n" + "#" * MAX_RULES_BYTES + "\n")  # over the size bound
    err, (out, _), _ = await glob(ws, mode, pattern="*/*.py")
    assert not err and out.splitlines() == ["a/x.py", "b/x.py", "c/x.py", "d/x.py"]
    # nor an exclude file reached through a symlinked `.git` or `.git/info`
    (outside / "info").mkdir()
    (outside / "info" / "exclude").write_text("*.py\n")
    (outside / "exclude").write_text("*.py\n")
    (ws / "a" / ".git").symlink_to(outside)
    (ws / "b" / ".git").mkdir()
    (ws / "b" / ".git" / "info").symlink_to(outside)
    for pattern in ("*/*.py", "*/x.py"):  # folders listed, and folders where x.py is looked up
        err, (out, _), _ = await glob(ws, mode, pattern=pattern)
        assert not err and out.splitlines() == ["a/x.py", "b/x.py", "c/x.py", "d/x.py"], pattern


# --- any depth, cancellation ----------------------------------------------------------------


@pytest.mark.slow
async def test_a_1100_level_tree_is_an_ordinary_result(ws: Path, mode: str) -> None:
    """Issue 11.6 / 14.4: the recursive walk raised RecursionError, masked as an internal error."""
    depth = 1100
    deepest = ws
    for _ in range(depth):  # by path, one level at a time (mkdir(parents=True) recurses)
        deepest = deepest / "d"
        deepest.mkdir()
    (deepest / "leaf.py").touch()  # ~2,200 characters: under PATH_MAX
    try:
        err, (out, msg), _ = await glob(ws, mode, pattern="d/**/*.py")
        assert not err and out == "d/" * depth + "leaf.py\n" and msg.startswith("Found 1 matches")
        # A thousand paths of up to 2,000 characters: a budget that holds them all.
        err, (out, msg), _ = await glob(ws, mode, pattern="**/", budget=4 << 20)
        assert not err and out.splitlines()[-1] == "/".join(["d"] * 1000)
        assert msg.startswith("Found more than 1000 matches for pattern `**/`.")
    finally:
        remove_chain(ws, "d", depth)


def remove_chain(top: Path, name: str, depth: int) -> None:
    """Remove ``top/name/name/…`` deepest first. pytest's own clean-up (shutil.rmtree, recursive
    on Python 3.11) overflows the stack on a tree this deep and ends the whole session."""
    # By path, not by holding a descriptor per level (1,100 of them pass a 1,024 fd limit):
    # `d/` × 1,100 is ~2,200 characters, under PATH_MAX.
    deepest = top / "/".join([name] * depth)
    for entry in os.listdir(deepest):
        os.unlink(deepest / entry)
    for level in range(depth, 0, -1):
        os.rmdir(top / "/".join([name] * level))


@pytest.mark.slow
async def test_a_cancelled_glob_stops_walking(ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 14.4: a cancelled Glob ran on for up to 20 s. A spy (not a mock: it calls the real
    os.scandir) notes when the walk lists its last directory."""
    for d in range(2000):
        for e in range(5):
            (ws / f"{'d' * 100}{d:04d}" / f"e{e}").mkdir(parents=True)
    last_listing = [0.0]
    real_scandir = os.scandir

    def spy(path: Any) -> Any:
        last_listing[0] = time.monotonic()
        return real_scandir(path)

    monkeypatch.setattr(glob_module.os, "scandir", spy)
    # 256 regex alternatives per entry: the whole walk takes ~5 s.
    pattern = "*/**/{" + ",".join(f"*{i}*y" for i in range(256)) + "}"
    async with connect(ws, mode) as c:
        with pytest.raises(Exception, match="timed out"):
            await c.call_tool("Glob", {"pattern": pattern}, timeout=0.3)
        gave_up = time.monotonic()
        deadline = gave_up + 10
        while time.monotonic() < deadline and time.monotonic() - last_listing[0] < 0.5:
            await anyio.sleep(0.05)  # until the walk has been quiet for 0.5 s
        assert last_listing[0] - gave_up < 1.0
        r = await call(c, "Glob", pattern="*0000/e*")  # and the server still answers
    assert text(r).startswith(f"{'d' * 100}0000/e0")


@pytest.mark.slow
async def test_a_cancelled_glob_stops_within_one_huge_directory(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flag is also read between chunks of one directory's entries. Every entry is a
    symlink, so the walk resolves each one: a spy (it calls the real method) notes when."""
    big = ws / "big"
    big.mkdir()
    (ws / "target").write_bytes(b"")
    for i in range(5000):  # ~0.8 ms an entry against 256 backtracking regexes: a 4 s walk
        os.symlink("../target", big / f"{'s' * 100}{i:05d}")
    last_resolve = [0.0]
    real_linked_dir = glob_module._Walk._linked_dir

    def spy(self: Any, path: str) -> bool:
        last_resolve[0] = time.monotonic()
        return bool(real_linked_dir(self, path))

    monkeypatch.setattr(glob_module._Walk, "_linked_dir", spy)
    pattern = "big/{" + ",".join(f"*{i}*y" for i in range(256)) + "}"
    async with connect(ws, mode) as c:
        with pytest.raises(Exception, match="timed out"):
            await c.call_tool("Glob", {"pattern": pattern}, timeout=0.3)
        gave_up = time.monotonic()
        deadline = gave_up + 10
        while time.monotonic() < deadline and time.monotonic() - last_resolve[0] < 0.5:
            await anyio.sleep(0.05)  # until the walk has been quiet for 0.5 s
        assert last_resolve[0] - gave_up < 1.0


# --- names shown escaped, the result fits the client -----------------------------------------


async def test_names_are_shown_escaped_and_found_by_that_spelling(ws: Path, mode: str) -> None:
    """SPEC §2.9 (issue 18.2): a name cannot forge a line or carry a lone surrogate."""
    names = ["new\nline.py", "esc\x1b[2J.py", "bidi\u202eyp.txt", "tick`.py"]
    for n in names:
        (ws / n).write_text("x")
    (ws / "dir\nname").mkdir()
    (ws / "dir\nname" / ".env").write_text("SECRET=1")
    (ws / "dir\nname" / "f.txt").write_text("x")
    os.close(os.open(os.fsencode(ws) + b"/caf\xe9.py", os.O_WRONLY | os.O_CREAT))
    _, (out, msg), _ = await glob(ws, mode, pattern="**")
    assert out.splitlines() == [
        "bidi\\u202eyp.txt", "caf\\xe9.py", "dir\\x0aname", "dir\\x0aname/f.txt", "esc\\x1b[2J.py", "new\\x0aline.py", "tick\\x60.py"
    ]  # fmt: skip
    assert "(.env)" in msg
    _, (out, msg), _ = await glob(ws, mode, pattern="*\n*")
    assert out.splitlines() == ["dir\\x0aname", "new\\x0aline.py"] and "`*\\x0a*`" in msg
    for shown in ("caf\\xe9.py", "new\\x0aline.py", "dir\\x0aname/*", "bidi\\u202e*"):
        _, (out, _), _ = await glob(ws, mode, pattern=shown, include_dirs=False)
        assert out.startswith(shown.removesuffix("*").removesuffix("/"))  # passed back, found


@pytest.mark.slow
async def test_an_undecodable_name_over_stdio_keeps_the_server_up(ws: Path) -> None:
    os.close(os.open(os.fsencode(ws) + b"/caf\xe9.py", os.O_WRONLY | os.O_CREAT))
    (ws / "plain.py").write_text("x")
    async with Client(stdio_transport(ws)) as c:
        r = await call(c, "Glob", pattern="*.py")
        assert not r.is_error and texts(r)[0] == "caf\\xe9.py\nplain.py\n"
        again = await call(c, "Glob", pattern="caf\\xe9.py")
        assert texts(again)[0] == "caf\\xe9.py\n"


async def test_the_whole_result_fits_the_client_budget(ws: Path, mode: str) -> None:
    """Issue 11.1: the result (summary included) fits the client's budget, in whole lines."""
    d = ws / ("x" * 200)
    d.mkdir()
    for i in range(300):
        (d / f"{'y' * 200}{i:04d}.txt").write_bytes(b"")
    async with connect(ws, mode, client="kimi") as c:
        r = await call(c, "Glob", pattern="*/*.txt")
    parts = texts(r)
    out, msg = parts
    assert sum(len(p) for p in parts) <= 100_000
    lines = out.splitlines()
    assert all(line == f"{'x' * 200}/{'y' * 200}{i:04d}.txt" for i, line in enumerate(lines))
    left = 300 - len(lines)
    assert 200 < len(lines) < 300
    assert msg.startswith("Found 300 matches for pattern `*/*.txt`.")
    assert f"Only the first {len(lines)} of these 300 are listed: the rest ({left})" in msg
    assert r.structured_content is None
    async with connect(ws, mode, result_budget=1 << 20) as c:  # a 1 MiB budget gets them all
        r = await call(c, "Glob", pattern="*/*.txt")
    out, msg = texts(r)
    assert len(out.splitlines()) == 300 and msg == "Found 300 matches for pattern `*/*.txt`."


async def test_pages_of_head_limit_and_offset_never_repeat_or_skip_a_name(ws: Path) -> None:
    """SPEC §8.7: Glob's head_limit/offset with Grep's semantics; each capped page names the next."""
    for d in range(3):
        (ws / f"d{d}").mkdir()
        for i in range(30):
            (ws / f"d{d}" / f"f{i:02d}.txt").write_bytes(b"")
    async with connect(ws, "auto") as c:
        whole = texts(await call(c, "Glob", pattern="**/*.txt"))[0].splitlines()
        pages, offset = [], 0
        while True:
            out, msg = texts(await call(c, "Glob", pattern="**/*.txt", head_limit=25, offset=offset))
            pages += out.splitlines()
            if "Use offset=" not in msg:
                assert msg == "Found 15 matches for pattern `**/*.txt` from offset 75 (total: 90)."
                break
            assert (
                msg
                == f"Results truncated to 25 matches from offset {offset} for pattern `**/*.txt`. Use offset={offset + 25} to see more."
            )
            offset += 25
        past = texts(await call(c, "Glob", pattern="**/*.txt", offset=500))
    assert len(whole) == 90 and pages == whole
    assert past == ["No matches at offset 500 for pattern `**/*.txt`: there are 90 in total."]
