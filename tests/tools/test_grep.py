"""Grep through a real MCP client, both protocol eras, with the real ripgrep."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from filegate.fsio import platform
from filegate.tools.grep import rg as grep_rg
from filegate.tools.grep import sandbox as grep_sandbox
from tests.conftest import MODES_LEGACY_SLOW, call, connect, text, texts


@pytest.fixture(params=MODES_LEGACY_SLOW)
def mode(request: pytest.FixtureRequest) -> str:
    """Both eras; the handshake-era twin in the slow set (tests/conftest.py says why)."""
    return str(request.param)


def tree(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)


async def grep(ws: Path, mode: str, **args: object) -> tuple[bool, list[str], None]:
    async with connect(ws, mode) as c:
        r = await call(c, "Grep", **args)
        assert r.structured_content is None  # text only (SPEC §1)
        return r.is_error, texts(r), None


def test_the_ripgrep_wheel_is_found_without_path() -> None:
    rg = grep_rg.find_rg()
    assert rg is not None and os.access(rg, os.X_OK)


async def test_files_with_matches_newest_first(ws: Path, mode: str) -> None:
    tree(ws, {"old.txt": "needle\n", "new.txt": "needle\n", "none.txt": "hay\n"})
    os.utime(ws / "old.txt", (time.time() - 1000, time.time() - 1000))
    err, parts, facts = await grep(ws, mode, pattern="needle")
    assert not err and parts == ["new.txt\nold.txt"]


@pytest.mark.parametrize("dated_by", ["dir_fd", "path"])
async def test_files_with_matches_newest_first_whatever_their_names(
    ws: Path, mode: str, dated_by: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each file is dated in the pinned directory (by path where there is no dir_fd: Windows,
    simulated here): the newest first even when its name sorts last. A file searched alone is
    listed by its own name."""
    if dated_by == "path":
        monkeypatch.setenv(platform.SIMULATE_ENV, "no-dirfd")
    tree(ws, {"a-old.txt": "needle\n", "m-mid.txt": "needle\n", "sub/z-new.txt": "needle\n"})
    now = time.time()
    os.utime(ws / "a-old.txt", (now - 2000, now - 2000))
    os.utime(ws / "m-mid.txt", (now - 1000, now - 1000))
    err, parts, _ = await grep(ws, mode, pattern="needle")
    assert not err and parts == ["sub/z-new.txt\nm-mid.txt\na-old.txt"]
    err, parts, _ = await grep(ws, mode, pattern="needle", path="sub/z-new.txt")
    assert not err and parts == ["sub/z-new.txt"]


async def test_a_line_that_is_not_utf8_is_shown_with_replacement_characters(ws: Path, mode: str) -> None:
    (ws / "latin1.txt").write_bytes(b"caf\xe9 needle\n")
    _, (out,), _ = await grep(ws, mode, pattern="needle", output_mode="content")
    assert out == "latin1.txt:1:caf\ufffd needle"


async def test_content_mode_with_context_and_separators(ws: Path, mode: str) -> None:
    tree(ws, {"a.txt": "hello\nworld\nhello again\nx\ny\nz\nhello\n"})
    _, (out,), _ = await grep(ws, mode, pattern="hello", output_mode="content", **{"-C": 1})
    assert out.splitlines() == [
        "a.txt:1:hello", "a.txt-2-world", "a.txt:3:hello again", "a.txt-4-x", "--",
        "a.txt-6-z", "a.txt:7:hello",
    ]  # fmt: skip
    _, (out,), _ = await grep(ws, mode, pattern="hello", output_mode="content", **{"-n": False})
    assert out.splitlines() == ["a.txt:hello", "a.txt:hello again", "a.txt:hello"]
    _, (out,), _ = await grep(ws, mode, pattern="HELLO AGAIN", output_mode="content", **{"-i": True})
    assert out == "a.txt:3:hello again"


async def test_single_file_search_still_prints_its_name(ws: Path, mode: str) -> None:
    tree(ws, {"sub/one.py": "x = 1\nx = 2\n"})
    _, (out,), _ = await grep(ws, mode, pattern="x", path="sub/one.py", output_mode="content")
    assert out == "sub/one.py:1:x = 1\nsub/one.py:2:x = 2"  # workdir-relative (SPEC §4 Grep)
    _, (out, msg), facts = await grep(ws, mode, pattern="x", path="sub/one.py", output_mode="count_matches")
    assert out == "sub/one.py:2\n" and msg == "Found 2 total occurrences across 1 files."


async def test_count_matches_totals(ws: Path, mode: str) -> None:
    tree(ws, {"a.txt": "aa a\n", "b/c.txt": "a\n"})
    _, (out, msg), _ = await grep(ws, mode, pattern="a", output_mode="count_matches")
    assert out.splitlines() == ["a.txt:3", "b/c.txt:1"]  # by path (SPEC §4 Grep: stable order)
    assert msg == "Found 4 total occurrences across 2 files."


async def test_paging_with_offset_and_head_limit(ws: Path, mode: str) -> None:
    tree(ws, {"a.txt": "".join(f"m{i}\n" for i in range(10))})
    _, (out, msg), facts = await grep(ws, mode, pattern="m", output_mode="content", head_limit=3, offset=2)
    assert out.splitlines() == ["a.txt:3:m2", "a.txt:4:m3", "a.txt:5:m4"]
    assert msg == "Results truncated to 3 lines (total: 10). Use offset=5 to see more."
    _, (out,), _ = await grep(ws, mode, pattern="m", output_mode="content", head_limit=0)
    assert out.count("\n") == 9


async def test_output_is_capped_at_50000_characters_and_long_lines_cut(ws: Path, mode: str) -> None:
    tree(ws, {"wide.txt": ("y" * 3000 + "\n") * 40})
    _, (out, msg), facts = await grep(ws, mode, pattern="y", output_mode="content", head_limit=0)
    assert len(out) <= 50_000
    # Marker included, as Kimi cuts (SPEC §4 Grep): a cut line is exactly 2,000 characters.
    lines = out.splitlines()
    assert all(len(line) <= 2000 for line in lines)
    assert lines[0].endswith("[...truncated]") and len(lines[0]) == 2000
    # One long line cut, nothing else: Kimi's sentence says the output was cut.
    _, (out, msg), _ = await grep(ws, mode, pattern="y", output_mode="content", head_limit=1)
    assert len(out.rstrip("\n")) == 2000 and msg.strip().endswith(
        "Output is truncated to fit in the message."
    )
    assert "Output is truncated to fit in the message." in msg


async def test_sensitive_files_are_never_shown_and_are_counted(ws: Path, mode: str) -> None:
    tree(ws, {".env": "TOKEN=hunter2\n", "my-1-dir/.env.local": "TOKEN=hunter3\n",
              "app.py": "TOKEN = os.environ['TOKEN']\n", ".env.example": "TOKEN=\n",
              "certs/server.PEM": "TOKEN-ish\n"})  # fmt: skip
    for output_mode in ("content", "files_with_matches", "count_matches"):
        err, parts, facts = await grep(ws, mode, pattern="TOKEN", output_mode=output_mode)
        joined = "\n".join(parts)
        assert not err and "hunter" not in joined and "my-1-dir/.env.local" not in joined
        assert "app.py" in joined and ".env.example" in joined
        assert "Skipped 3 sensitive file(s) (.env, .env.local, server.PEM)" in joined
    err, parts, _ = await grep(ws, mode, pattern="TOKEN", path=".env", output_mode="content")
    assert "hunter2" not in "".join(parts) and "Skipped 1 sensitive file(s) (.env)" in parts[0]


async def test_vcs_folders_skipped_gitignore_respected_unless_asked(ws: Path, mode: str) -> None:
    tree(ws, {".git/config": "needle\n", ".gitignore": "build/\n", "build/out.txt": "needle\n",
              ".hidden.txt": "needle\n", "src.txt": "needle\n"})  # fmt: skip
    os.makedirs(ws / ".git" / "objects", exist_ok=True)
    _, (out,), _ = await grep(ws, mode, pattern="needle")
    assert sorted(out.splitlines()) == [".hidden.txt", "src.txt"]
    _, (out,), _ = await grep(ws, mode, pattern="needle", include_ignored=True)
    assert sorted(out.splitlines()) == [".hidden.txt", "build/out.txt", "src.txt"]


async def test_gitignore_is_respected_without_a_git_folder_as_glob_does(ws: Path, mode: str) -> None:
    """SPEC §4: `.gitignore` is respected unless include_ignored — rg alone needs a `.git` for
    that, Glob does not; a workspace that is no repository (or a subfolder of one) is searched
    the same way by both."""
    tree(ws, {".gitignore": "build/\n*.log\n", "build/out.txt": "needle\n", "app.log": "needle\n",
              "src.txt": "needle\n"})  # fmt: skip
    _, (out,), _ = await grep(ws, mode, pattern="needle")
    assert out == "src.txt"
    _, (out,), _ = await grep(ws, mode, pattern="needle", include_ignored=True)
    assert sorted(out.splitlines()) == ["app.log", "build/out.txt", "src.txt"]


async def test_glob_and_type_filters(ws: Path, mode: str) -> None:
    tree(ws, {"a.py": "needle\n", "b.js": "needle\n", "c.ts": "needle\n"})
    _, (out,), _ = await grep(ws, mode, pattern="needle", glob="*.{js,ts}")
    assert sorted(out.splitlines()) == ["b.js", "c.ts"]
    _, (out,), _ = await grep(ws, mode, pattern="needle", type="py")
    assert out == "a.py"
    err, parts, _ = await grep(ws, mode, pattern="needle", type="nosuchtype")
    assert err and parts[0].startswith("Failed to grep. Error:")


async def test_path_rules_apply_to_grep(ws: Path, outside: Path, mode: str) -> None:
    (ws / "out").symlink_to(outside)
    os.mkfifo(ws / "fifo")
    async with connect(ws, mode) as c:
        r = await call(c, "Grep", pattern="OUTSIDE", path="../outside")
        assert r.is_error and "is not an absolute path" in text(r) and "CONTENT" not in text(r)
        r = await call(c, "Grep", pattern="OUTSIDE", path="out")
        assert r.is_error and "CONTENT" not in text(r)
        r = await call(c, "Grep", pattern="OUTSIDE")  # the symlinked dir is not followed
        assert not r.is_error and "No matches found" in text(r)
        r = await call(c, "Grep", pattern="x", path="fifo")
        assert r.is_error and text(r) == "`fifo` is not a file."
        r = await call(c, "Grep", pattern="x", path="/dev/zero")
        assert r.is_error and text(r) == "`/dev/zero` is not a file."
        r = await call(c, "Grep", pattern="x", path="nope")
        assert r.is_error and text(r) == "`nope` does not exist."
    async with connect(ws, mode, confine=True) as c:
        r = await call(c, "Grep", pattern="OUTSIDE", path=str(outside))
        assert r.is_error and "outside the workspace" in text(r) and "CONTENT" not in text(r)


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        ({"pattern": "("}, "Failed to grep. Error: regex parse error:\n    (\n"),
        ({"pattern": "x", "output_mode": "lines"}, "Input should be 'content', 'files_with_matches'"),
        ({"pattern": "x", "-A": -1}, "-A: Input should be greater than or equal to 0"),
        ({"pattern": "x", "head_limit": -5}, "head_limit: Input should be greater than or equal to 0"),
    ],
)
async def test_bad_input_gives_clear_errors(ws: Path, mode: str, args: dict, expect: str) -> None:
    err, parts, _ = await grep(ws, mode, **args)
    assert err and expect in parts[0]


async def test_no_matches_message(ws: Path, mode: str) -> None:
    tree(ws, {"a.txt": "hay\n"})
    err, parts, _ = await grep(ws, mode, pattern="needle")
    assert not err and parts == ["No matches found."]


def many_matching_lines(ws: Path) -> None:
    """20 MB in 200 files where every line matches: rg needs seconds to print 10 M result lines
    (and prints each file's results as soon as that file is done)."""
    for i in range(200):
        (ws / f"f{i:03d}.txt").write_bytes(b"a\n" * 50_000)


async def test_timeout_returns_partial_results_and_kills_rg(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    many_matching_lines(ws)
    monkeypatch.setattr(grep_rg, "RG_TIMEOUT_S", 0.3)
    err, parts, facts = await grep(ws, mode, pattern="a", output_mode="content", head_limit=5)
    assert not err and parts[0].count("\n") == 5 and ".txt:1:a\n" in parts[0]
    assert "Grep timed out after 0.3s. Partial results returned." in parts[1]
    assert _rg_children() == []


async def test_cancelled_call_kills_rg(ws: Path, mode: str) -> None:
    many_matching_lines(ws)
    async with connect(ws, mode) as c:
        with pytest.raises(Exception, match="timed out"):
            await c.call_tool("Grep", {"pattern": "a", "output_mode": "content"}, timeout=0.3)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _rg_children():
        time.sleep(0.05)
    assert _rg_children() == []


def _rg_children() -> list[int]:
    me = os.getpid()
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm == "rg" and int(fields[1]) == me and fields[0] != "Z":
            found.append(int(pid))
    return found


# --- issue 18: files a cloned repository brings, rg's error text, the VCS exclusion -------

BOMB_SCRIPT = r"""
import asyncio, json, resource, sys
from pathlib import Path
# The server (this process) and rg (its child inherits the cap) under 2 GiB of address space:
# a regression that lets rg read /dev/zero fails here, it cannot take the machine down.
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
sys.path.insert(0, sys.argv[2])
from tests.conftest import call, connect, texts

async def main():
    out = []
    async with connect(Path(sys.argv[1]), "auto") as c:
        for mode in ("files_with_matches", "content"):
            r = await call(c, "Grep", pattern="needle", output_mode=mode)
            out.append([r.is_error, texts(r)])
        r = await call(c, "Grep", pattern="needle", path="sub")
        out.append([r.is_error, texts(r)])
    print(json.dumps(out))

asyncio.run(main())
"""


@pytest.mark.slow
def test_ignore_files_that_are_links_or_devices_are_never_read(ws: Path) -> None:
    """18.1: .gitignore/.ignore/.rgignore linked to /dev/zero made rg eat all memory; a FIFO
    one made it hang. Under a 2 GiB cap and 60 s, every search answers at once."""
    import json
    import subprocess
    import sys

    tree(ws, {"found.txt": "needle\n", "sub/deep.txt": "needle\n", "sub/kept.txt": "needle\n"})
    (ws / ".git").mkdir()
    for d in (ws, ws / "sub"):
        (d / ".ignore").symlink_to("/dev/zero")
        (d / ".rgignore").symlink_to("/dev/zero")
    (ws / ".gitignore").symlink_to("/dev/zero")
    os.mkfifo(ws / "sub" / ".gitignore")
    (ws / "sub" / "deeper").mkdir()
    with open(ws / "sub" / "deeper" / ".gitignore", "wb") as f:
        f.truncate(4 << 30)  # regular, sparse, one endless line of NULs
    repo = Path(__file__).resolve().parents[2]
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", BOMB_SCRIPT, str(ws), str(repo)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert time.monotonic() - started < 30
    (fwm_err, fwm), (c_err, content), (s_err, sub) = json.loads(done.stdout)
    assert not fwm_err and not c_err and not s_err
    assert sorted(fwm[0].splitlines()) == ["found.txt", "sub/deep.txt", "sub/kept.txt"]
    assert "timed out" not in fwm[1]
    assert (
        "3 .gitignore file(s) were not used: they are symlinks, not regular files or larger than 1 MiB."
        in fwm[1]
    )
    assert content[0].splitlines() == ["found.txt:1:needle", "sub/deep.txt:1:needle", "sub/kept.txt:1:needle"]
    assert sub[0].splitlines()[0].startswith("sub/")


async def test_ignore_files_pointing_out_are_not_read_nor_quoted(
    ws: Path, outside: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """18.3: an ignore file linked to an outside file, a secret or /proc/self/environ was read
    by rg, and rg quoted its lines (an outside file, a secret, FILEGATE_TOKEN) in its stderr."""
    monkeypatch.setenv("FILEGATE_TOKEN", "tok-CANARY-env")  # rg inherits it: /proc/self/environ
    (outside / "rules").write_text("hidden.txt\nOUT-CANARY[\n")
    tree(ws, {".env": "ENV-CANARY[\n", "hidden.txt": "needle\n", "a/b.txt": "needle\n"})
    (ws / ".git").mkdir()
    (ws / ".gitignore").symlink_to(outside / "rules")
    (ws / "a" / ".gitignore").symlink_to(ws / ".env")
    (ws / ".ignore").symlink_to("/proc/self/environ")
    for output_mode in ("files_with_matches", "content", "count_matches"):
        err, parts, _ = await grep(ws, mode, pattern="needle", output_mode=output_mode)
        joined = "\n".join(parts)
        assert not err and "CANARY" not in joined and "rg:" not in joined
        assert "hidden.txt" in joined and "a/b.txt" in joined  # the outside rule was not applied


async def test_regular_gitignore_and_exclude_are_honoured_in_and_above_the_search(
    ws: Path, mode: str
) -> None:
    tree(ws, {".gitignore": "build/\n/top-only.txt\n", ".git/info/exclude": "excluded.txt\n",
              "src/build/x.txt": "needle\n", "src/keep.txt": "needle\n", "src/excluded.txt": "needle\n",
              "top-only.txt": "needle\n", "src/top-only.txt": "needle\n",
              "src/.gitignore": "local.txt\n", "src/local.txt": "needle\n",
              ".ignore": "src/keep.txt\n", "src/.rgignore": "keep.txt\n"})  # fmt: skip
    _, (out, _msg), _ = await grep(ws, mode, pattern="needle", output_mode="count_matches")
    assert out.splitlines() == ["src/keep.txt:1", "src/top-only.txt:1"]  # .ignore/.rgignore not honoured
    _, (out, _msg), _ = await grep(ws, mode, pattern="needle", path="src", output_mode="count_matches")
    assert out.splitlines() == ["src/keep.txt:1", "src/top-only.txt:1"]
    # One unusable ignore file: rg reads none itself, the regular ones still apply.
    (ws / "src" / "other").mkdir()
    (ws / "src" / "other" / ".gitignore").symlink_to("/dev/null")
    _, (out, msg), _ = await grep(ws, mode, pattern="needle", output_mode="count_matches")
    assert out.splitlines() == ["src/keep.txt:1", "src/top-only.txt:1"]
    assert "1 .gitignore file(s) were not used" in msg


@pytest.mark.parametrize(
    ("glob", "found"),
    [("*", ["config", "x/config"]), ("**", ["config", "x/config"]), (".git/**", []),
     ("**/config", ["config", "x/config"]), ("{.git,x}/**", ["x/config"])],
)  # fmt: skip
async def test_the_callers_glob_cannot_undo_the_vcs_exclusion(
    ws: Path, mode: str, glob: str, found: list
) -> None:
    """18.12: `glob: "*"` searched .git/ (tokens in remote URLs were printed). The plain files
    the glob matches are found (the positive control: a Grep that errs or finds nothing fails)."""
    tree(ws, {".git/config": "url = https://tok-CANARY@host/x\n", ".hg/hgrc": "CANARY\n", "config": "CANARY\n",
              "x/config": "CANARY\n"})  # fmt: skip
    err, parts, facts = await grep(
        ws, mode, pattern="CANARY", glob=glob, output_mode="content", include_ignored=True
    )
    assert not err and "tok-CANARY" not in "\n".join(parts) and ".hg" not in "\n".join(parts)
    shown = sorted(line.split(":", 1)[0] for line in parts[0].rstrip("\n").split("\n")) if found else []
    assert shown == found and (found or parts == ["No matches found."]), parts


def _deep_tree_beyond_path_max(ws: Path) -> None:
    """A folder rg cannot enter even as root: its path is longer than PATH_MAX. Made by
    chdir, step by step (no dir_fd: FILEGATE_SIMULATE=no-dirfd takes it away)."""
    here = os.getcwd()
    try:
        os.chdir(ws)
        for _ in range(18):
            os.mkdir("d" * 250)
            os.chdir("d" * 250)
        Path("deep.txt").write_text("needle\n")
    finally:
        os.chdir(here)


def _remove_deep_tree(ws: Path) -> None:
    """The tree of _deep_tree_beyond_path_max removed, deepest first, by chdir: pytest's
    rmtree goes by path where there is no dir_fd and cannot reach past PATH_MAX."""
    here = os.getcwd()
    try:
        os.chdir(ws)
        depth = 0
        while os.path.isdir("d" * 250):
            os.chdir("d" * 250)
            depth += 1
        for name in os.listdir("."):
            os.unlink(name)
        for _ in range(depth):
            os.chdir("..")
            os.rmdir("d" * 250)
    finally:
        os.chdir(here)


async def test_unreadable_entries_are_counted_never_quoted(ws: Path, mode: str) -> None:
    tree(ws, {"ok.txt": "needle\n"})
    _deep_tree_beyond_path_max(ws)
    try:
        err, parts, _ = await grep(ws, mode, pattern="needle")
    finally:
        _remove_deep_tree(ws)
    assert not err and parts[0] == "ok.txt\n"
    assert parts[1].endswith("could not be read.") and "ddddd" not in parts[1] and "rg:" not in parts[1]
    assert "1 file or folder could not be read." in parts[1]


# --- issues 10 and 11: names, workdir-relative paths, stable order, paging, budget -------


async def test_a_name_with_a_line_break_cannot_attribute_text_to_another_file(ws: Path, mode: str) -> None:
    """10.2: records are split at the first NUL, never at a line break first."""
    tree(ws, {"real.txt": "harmless\n", "x\nreal.txt": "forged needle\n", "--": "needle\n"})
    _, (out,), _ = await grep(ws, mode, pattern="needle", output_mode="content", **{"-C": 1})
    assert out.splitlines() == ["--:1:needle", "--", "x\\x0areal.txt:1:forged needle"]
    _, (out, _msg), _ = await grep(ws, mode, pattern="needle", output_mode="count_matches")
    assert out.splitlines() == ["--:1", "x\\x0areal.txt:1"]
    _, (out,), _ = await grep(ws, mode, pattern="needle")
    assert sorted(out.splitlines()) == ["--", "x\\x0areal.txt"]


async def test_undecodable_and_control_names_are_escaped(ws: Path, mode: str) -> None:
    """18.2 (Grep part): `caf\\xe9.py` was printed with U+FFFD, a name ReadFile cannot open."""
    (ws / os.fsdecode(b"caf\xe9.py")).write_text("needle\n")
    (ws / "bidi\u202egnp.txt").write_text("needle \x1b[2Kline\r\n")
    _, (out,), _ = await grep(ws, mode, pattern="needle", output_mode="content")
    assert out.splitlines() == ["bidi\\u202egnp.txt:1:needle \\x1b[2Kline", "caf\\xe9.py:1:needle"]
    assert "\ufffd" not in out


async def test_paths_are_relative_to_the_workdir_and_readfile_takes_them(
    ws: Path, outside: Path, mode: str
) -> None:
    """11.5: Grep(path="src") printed `pkg/mod.py`, which ReadFile could not open."""
    tree(ws, {"src/pkg/mod.py": "needle = 1\n"})
    async with connect(ws, mode) as c:
        for output_mode, first in (("files_with_matches", "src/pkg/mod.py"),
                                   ("content", "src/pkg/mod.py:1:needle = 1"),
                                   ("count_matches", "src/pkg/mod.py:1\n")):  # fmt: skip
            r = await call(c, "Grep", pattern="needle", path="src", output_mode=output_mode)
            assert texts(r)[0] == first
            r = await call(c, "Grep", pattern="needle", path="src/pkg", output_mode=output_mode)
            assert texts(r)[0] == first
        r = await call(c, "ReadFile", path="src/pkg/mod.py")
        assert not r.is_error and "needle = 1" in text(r)
        r = await call(c, "Grep", pattern="OUTSIDE", path=str(outside))
        assert texts(r)[0] == str(outside / "secret.txt")


def _many_matches(ws: Path) -> None:
    """300 matching lines in 30 files (and files with equal times), the issue's paging case."""
    stamp = time.time() - 100
    for i in range(30):
        p = ws / f"d{i % 4}" / f"f{(i * 7) % 30:02d}.txt"
        p.parent.mkdir(exist_ok=True)
        p.write_text("".join(f"needle {i} {j}\nhay\n" for j in range(10)))
        os.utime(p, (stamp + i % 3, stamp + i % 3))


@pytest.mark.slow
async def test_same_call_same_bytes_and_paging_visits_every_result_once(ws: Path, mode: str) -> None:
    """11.3: content and count orders changed from call to call; paging 300 matches as two
    pages of 150 repeated and lost lines."""
    _many_matches(ws)
    async with connect(ws, mode) as c:
        for output_mode, extra in (("content", {}), ("content", {"-C": 1}), ("count_matches", {}),
                                   ("files_with_matches", {})):  # fmt: skip
            args = {"pattern": "needle", "output_mode": output_mode, **extra}
            fulls = {text(await call(c, "Grep", head_limit=0, **args)) for _ in range(4)}
            assert len(fulls) == 1
            full = texts(await call(c, "Grep", head_limit=0, **args))[0].splitlines()
            assert (
                len(full) == {"content": 300, "count_matches": 30, "files_with_matches": 30}[output_mode]
                or extra
            )
            half = (len(full) + 1) // 2
            for _ in range(3):
                first = await call(c, "Grep", head_limit=half, offset=0, **args)
                said = texts(first)[1]
                nxt = int(said.split("Use offset=", 1)[1].split(" ", 1)[0])
                assert f"Results truncated to {half} lines (total: {len(full)})." in said
                second = await call(c, "Grep", head_limit=half, offset=nxt, **args)
                assert texts(first)[0].splitlines() + texts(second)[0].splitlines() == full
        r = await call(c, "Grep", pattern="needle", output_mode="content", head_limit=0)
        rows = texts(r)[0].splitlines()
        paths = [row.split(":", 1)[0] for row in rows]
        assert paths == sorted(paths)
        assert [row for row in rows if row.startswith("d0/f00.txt:")] == [
            f"d0/f00.txt:{2 * j + 1}:needle 0 {j}" for j in range(10)
        ]
        r = await call(c, "Grep", pattern="needle")
        names = texts(r)[0].splitlines()
        times = [-(ws / n).stat().st_mtime_ns for n in names]
        assert sorted(zip(times, names, strict=True)) == list(
            zip(times, names, strict=True)
        )  # newest first, ties by path


async def test_an_offset_past_the_end_says_so(ws: Path, mode: str) -> None:
    """11.7: it said "Tool output is empty."."""
    tree(ws, {"a.txt": "m\nm\nm\n"})
    err, parts, facts = await grep(ws, mode, pattern="m", output_mode="content", offset=7)
    assert not err and parts == [
        "No results at offset 7: the search has 3 result line(s) in all, at offsets 0 to 2."
    ]


async def test_the_whole_result_fits_the_clients_budget(ws: Path, mode: str) -> None:
    """11.1: Kimi cuts a result at 100,000 characters; the summary must survive the cut."""
    tree(ws, {"a.txt": "".join(f"needle {i:04d} " + "x" * 80 + "\n" for i in range(1500))})
    async with connect(ws, mode, result_budget=5000) as c:
        r = await call(c, "Grep", pattern="needle", output_mode="content", head_limit=0)
        out, msg = texts(r)
        assert len(out) + len(msg) <= 5000
        n = len(out.splitlines())
        assert msg.startswith(f"Results truncated to {n} lines (total: 1500). Use offset={n} to see more.")
        r2 = await call(c, "Grep", pattern="needle", output_mode="content", head_limit=0, offset=n)
        assert texts(r2)[0].splitlines()[0] == f"a.txt:{n + 1}:needle {n:04d} " + "x" * 80


async def test_count_total_leaves_out_the_matches_in_skipped_secrets(ws: Path, mode: str) -> None:
    """Issue 17 (planted bug): "Found N total occurrences" counting a skipped secret's matches
    tells how many times the pattern occurs in it."""
    tree(
        ws,
        {".env": "TOKEN TOKEN TOKEN\nTOKEN\n", "keys/id_rsa": "TOKEN\n" * 5, "app.py": "TOKEN\nTOKEN = 1\n"},
    )
    _, (out, msg), facts = await grep(ws, mode, pattern="TOKEN", output_mode="count_matches")
    assert out == "app.py:2\n"
    assert msg == (
        "Found 2 total occurrences across 1 files. Skipped 2 sensitive file(s) (.env, id_rsa) to "
        "protect secrets. These files may contain credentials or private keys."
    )


async def test_a_remembered_walk_still_sees_an_ignore_file_swapped_for_a_link(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk that vets ignore files is remembered per directory (by ctime and inode): a
    `.gitignore` replaced by a link to /dev/zero after a first search is still caught."""
    from filegate.tools.grep import walk as grep_ignores

    monkeypatch.setattr(grep_ignores, "RACY_NS", 0)  # trust every remembered directory
    tree(ws, {"sub/deep/x.txt": "needle\n", "sub/.gitignore": "nothing\n", "sub/y.txt": "needle\n"})
    (ws / ".git").mkdir()
    _, parts, _ = await grep(ws, mode, pattern="needle", output_mode="content")
    assert parts == ["sub/deep/x.txt:1:needle\nsub/y.txt:1:needle"]
    (ws / "sub" / ".gitignore").unlink()
    (ws / "sub" / ".gitignore").symlink_to("/dev/zero")
    _, parts, facts = await grep(ws, mode, pattern="needle")
    assert "1 .gitignore file(s) were not used" in parts[1]
    os.mkfifo(ws / "sub" / "deep" / ".gitignore")
    _, parts, facts = await grep(ws, mode, pattern="needle")
    assert "2 .gitignore file(s) were not used" in parts[1] and "timed out" not in parts[1]


async def test_a_binary_file_searched_alone_says_it_matches(ws: Path, mode: str) -> None:
    """rg's note for a binary file has no NUL after the name: it is said, not dropped."""
    (ws / "bin.dat").write_bytes(b"needle\0bin\nneedle two\n")
    _, parts, _ = await grep(ws, mode, pattern="needle", path="bin.dat", output_mode="content")
    assert parts == ['bin.dat: binary file matches (found "\\0" byte around offset 6)']


async def test_a_binary_file_searched_alone_keeps_its_matches_before_the_note(ws: Path, mode: str) -> None:
    """rg prints the lines that matched before the NUL byte, then its note: both, in order."""
    (ws / "late.bin").write_bytes(b"needle one\n" + b"x\n" * 50_000 + b"\0needle two\n")
    _, (out,), _ = await grep(ws, mode, pattern="needle", path="late.bin", output_mode="content")
    assert out.splitlines() == [
        "late.bin:1:needle one",
        'late.bin: binary file matches (found "\\0" byte around offset 100011)',
    ]


async def test_a_line_of_exactly_the_longest_length_is_shown_whole(ws: Path, mode: str) -> None:
    body = "needle" + "x" * (2000 - len("a.txt:1:") - len("needle"))
    (ws / "a.txt").write_text(body + "\n")
    _, parts, _ = await grep(ws, mode, pattern="needle", output_mode="content")
    assert parts == [f"a.txt:1:{body}"] and len(parts[0]) == 2000


async def test_a_reincluded_secret_between_context_groups_is_dropped_and_the_groups_kept(
    ws: Path, mode: str
) -> None:
    """rg prints the group separator after a sensitive file's rows too (a `.gitignore` with
    `!.env` takes it back in): the parser drops that file's rows and keeps the others' groups."""
    files = {".gitignore": "!.env\n", ".env": "TOKEN=1\nx\nx\nx\nTOKEN=2\n"}
    files |= {f"f{i}.txt": "TOKEN\nx\nx\nx\nTOKEN\n" for i in range(4)}
    tree(ws, files)
    _, (out, _), _ = await grep(ws, mode, pattern="TOKEN", output_mode="content", **{"-C": 1})
    expected: list[str] = []
    for i in range(4):
        expected += ["--"] if expected else []
        expected += [f"f{i}.txt:1:TOKEN", f"f{i}.txt-2-x", "--", f"f{i}.txt-4-x", f"f{i}.txt:5:TOKEN"]
    assert out.rstrip("\n").splitlines() == expected


@pytest.mark.slow
async def test_what_is_said_of_skipped_secrets_does_not_depend_on_their_content(ws: Path, mode: str) -> None:
    """SPEC §2.6: the skipped names and their number were those of the secrets that matched,
    so a pattern tried against `.env` told whether it occurs there, one guess at a time."""
    tree(ws, {".env": "AWS_SECRET=AKIA1234\n", "keys/id_rsa": "KEY\n", "app.py": "print()\n"})
    answers = set()
    for pattern in ("AWS_SECRET=AKIA1", "AWS_SECRET=AKIA9", "print", "nothing-anywhere"):
        for output_mode in ("files_with_matches", "content", "count_matches"):
            _, parts, facts = await grep(ws, mode, pattern=pattern, output_mode=output_mode)
            said = "\n".join(parts)
            assert "AKIA" not in said.replace(pattern, "") and "Skipped 2 sensitive file(s)" in said
            answers.add(said.split("Skipped", 1)[1])
        for path in (".env", "keys/id_rsa"):
            _, parts, facts = await grep(ws, mode, pattern=pattern, path=path, output_mode="count_matches")
            assert parts == [
                "No matches found. Found 0 total occurrences across 0 files. Skipped 1 sensitive file(s) "
                f"({path.rsplit('/', 1)[-1]}) to protect secrets. These files may contain credentials or private keys."
            ]
    assert answers == {
        " 2 sensitive file(s) (.env, id_rsa) to protect secrets. These files may contain credentials or private keys."
    }


def test_the_walks_name_filter_never_clears_a_sensitive_path() -> None:
    """Pure logic: the walk checks a file's whole path only when the cheap tests say it may be
    sensitive; they must let through every path the full check calls sensitive."""
    import itertools
    import unicodedata

    from filegate.policy.secrets import SecretMatcher
    from filegate.tools.grep.walk import Secrets

    extra = [
        "secrets/",
        "a/**/b.txt",
        ".ssh/*",
        "Café.txt",
        "deep/dir/*.cfg",
        "**/tok*",
        "/rooted.txt",
        "x?y/[ab]c",
    ]
    matcher = SecretMatcher(extra)
    secrets = Secrets("/r", matcher.is_sensitive, 0, matcher.patterns)
    names = ["credentials", "credentials.json", "config", "config.json", ".env", ".ENV.local", ".env.example",
             "id_rsa", "id_rsa_work", "x.PEM", "k.key", ".netrc", "b.txt", "k", "Café.txt",
             unicodedata.normalize("NFD", "Café.txt"), "q.cfg", "token", "TOKEN.md", "rooted.txt", "ac", "bc",
             "plain.py", ".gitignore", "exclude"]  # fmt: skip
    dirs = ["/r", "/r/.aws", "/r/.gcp", "/r/.git", "/r/.kube", "/r/.docker", "/r/secrets", "/r/x/secrets/y",
            "/r/a/q", "/r/a", "/r/.ssh", "/r/deep/dir", "/r/credentials", "/r/.env.example", "/r/x/.ENV",
            "/r/xzy", "/r/src"]  # fmt: skip
    sensitive = 0
    for d, n in itertools.product(dirs, names):
        if matcher.is_sensitive(f"{d}/{n}"):
            sensitive += 1
            assert secrets.dir_may_hold(d + "/") or secrets.may_be(n), f"{d}/{n}"
    assert sensitive > 100  # the table exercises the rules
    default = SecretMatcher()
    plain = Secrets("/r", default.is_sensitive, 0, default.patterns)
    assert not plain.may_be("plain.py") and not plain.dir_may_hold("/r/src/") and plain.may_be("config")


async def test_every_escaped_path_grep_prints_opens_with_readfile(ws: Path, mode: str) -> None:
    """SPEC §2.9: the shown spelling of a name can be passed back and names the same file."""
    (ws / os.fsdecode(b"caf\xe9.py")).write_text("needle 1\n")
    (ws / "x\nreal.txt").write_text("needle 2\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "tab\there.txt").write_text("needle 3\n")
    async with connect(ws, mode) as c:
        r = await call(c, "Grep", pattern="needle", path="sub/..", output_mode="files_with_matches")
        printed = texts(r)[0].splitlines()
        assert sorted(printed) == ["caf\\xe9.py", "sub/tab\\x09here.txt", "x\\x0areal.txt"]
        for p in printed:
            r = await call(c, "ReadFile", path=p)
            assert not r.is_error and "needle" in text(r), (p, text(r))


async def test_text_after_a_carriage_return_is_kept_and_shown_escaped(ws: Path, mode: str) -> None:
    """Issue 18 item 14: rows were split at CR too, so the text after a bare CR was lost."""
    (ws / "cr.txt").write_bytes(b"one\rneedle two\r\nthree needle\rtail\n")
    _, (out,), _ = await grep(ws, mode, pattern="needle", output_mode="content")
    assert out.splitlines() == ["cr.txt:1:one\\x0dneedle two", "cr.txt:2:three needle\\x0dtail"]


@pytest.mark.parametrize("sandboxed", [True, False], ids=["landlock-way", "plain-way"])
async def test_rg_runs_under_the_memory_limit(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch, sandboxed: bool
) -> None:
    """18.1: rg's address space is capped from its start, whichever way it is started (inside
    the Landlock sandbox where there is one, plainly elsewhere). With a cap too small for rg
    itself, the search fails cleanly (without the cap it would succeed)."""
    if not sandboxed:
        monkeypatch.setitem(grep_sandbox._state, "abi", 0)
    tree(ws, {"a.txt": "needle\n" * 1000})
    monkeypatch.setattr(grep_rg, "RG_MEMORY_LIMIT", 4 << 20)
    err, parts, _ = await grep(ws, mode, pattern="needle", output_mode="content", head_limit=0)
    assert err and parts[0].startswith("Failed to grep. Error: ripgrep failed"), parts


# --- issue 26: rg itself prints a sensitive file; the second filter is what stops it ---------


async def test_a_gitignore_that_reincludes_a_secret_does_not_show_it_in_any_mode(ws: Path, mode: str) -> None:
    """The secret patterns reach rg as an `--ignore-file`, which a tree's own `.gitignore` outranks:
    `!.env` there makes rg print `.env` itself. The parser's filter must drop it in every mode —
    and in count mode neither its line nor its matches in the total (issue 26: `.env:3`)."""
    tree(ws, {".gitignore": "!.env\n!*.pem\n", ".env": "TOKEN=1\nTOKEN=2\nTOKEN=3\n",
              "app.py": "TOKEN = 1\n", "server.pem": "TOKEN\n"})  # fmt: skip
    _, (out, msg), facts = await grep(ws, mode, pattern="TOKEN", output_mode="count_matches")
    out = out.rstrip("\n")  # a text block before another ends with a line break
    assert out == "app.py:1", out  # the positive control: the search ran and found the plain file
    assert msg.startswith("Found 1 total occurrences across 1 files.")
    assert "Skipped 2 sensitive file(s) (.env, server.pem)" in msg, msg
    _, (out, _), _ = await grep(ws, mode, pattern="TOKEN", output_mode="content")
    assert out.rstrip("\n") == "app.py:1:TOKEN = 1"
    _, (out, _), _ = await grep(ws, mode, pattern="TOKEN")
    assert out.rstrip("\n") == "app.py"


async def test_a_case_variant_of_a_path_rule_is_left_out_up_front_and_counted(ws: Path, mode: str) -> None:
    """`.aws/credentials` is a path rule; `.aws/CREDENTIALS` is the same file on a case-folding
    disk and matches it (the rules ignore case). The walk's name filter must not clear it by a
    case-sensitive look at the rule's last part: the "skipped" notice and count would vanish.
    (`.kube/` is sensitive as a whole since SPEC's turn-4 list: not a path rule any more.)"""
    tree(ws, {".aws/CREDENTIALS": "token: abc\n", ".aws/notes.txt": "token: none\n"})
    _, (out, msg), facts = await grep(ws, mode, pattern="token", output_mode="count_matches")
    assert out.rstrip("\n") == ".aws/notes.txt:1"
    assert "Skipped 1 sensitive file(s) (CREDENTIALS)" in msg


async def test_the_skip_sentence_names_only_secrets_within_the_callers_glob_and_type(
    ws: Path, mode: str
) -> None:
    """Issue 24.5: sensitive files the caller's own `glob`/`type` left out are not "skipped";
    those within scope are named whether or not they match (never only the matching ones)."""
    tree(ws, {".env": "TOKEN=hunter2\n", "app.py": "TOKEN = 1\n", "certs/server.pem": "nothing\n",
              "certs/notes.txt": "TOKEN\n"})  # fmt: skip
    _, parts, facts = await grep(ws, mode, pattern="TOKEN", glob="*.py")
    assert [p.strip() for p in parts] == ["app.py"]  # no skip sentence
    _, parts, _ = await grep(ws, mode, pattern="TOKEN", type="py")
    assert [p.strip() for p in parts] == ["app.py"]
    _, parts, facts = await grep(ws, mode, pattern="TOKEN", glob="certs/**")
    assert parts[0].strip() == "certs/notes.txt" and "Skipped 1 sensitive file(s) (server.pem)" in parts[1]
    _, parts, _ = await grep(ws, mode, pattern="TOKEN", glob="!*.py")
    assert "Skipped 2 sensitive file(s) (.env, server.pem)" in parts[-1]
