"""Grep through a real MCP client, both protocol eras, with the real ripgrep."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from filegate.tools import grep as grep_module
from tests.conftest import call, connect, text, texts


def tree(root: Path, files: dict[str, str]) -> None:
    for name, content in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)


async def grep(ws: Path, mode: str, **args: object) -> tuple[bool, list[str], dict | None]:
    async with connect(ws, mode) as c:
        r = await call(c, "Grep", **args)
        return r.is_error, texts(r), r.structured_content


def test_the_ripgrep_wheel_is_found_without_path() -> None:
    rg = grep_module.find_rg()
    assert rg is not None and os.access(rg, os.X_OK)


async def test_files_with_matches_newest_first(ws: Path, mode: str) -> None:
    tree(ws, {"old.txt": "needle\n", "new.txt": "needle\n", "none.txt": "hay\n"})
    os.utime(ws / "old.txt", (time.time() - 1000, time.time() - 1000))
    err, parts, facts = await grep(ws, mode, pattern="needle")
    assert not err and parts == ["new.txt\nold.txt"]
    assert facts and facts["total_lines"] == 2 and facts["mode"] == "files_with_matches"


async def test_content_mode_with_context_and_separators(ws: Path, mode: str) -> None:
    tree(ws, {"a.txt": "hello\nworld\nhello again\nx\ny\nz\nhello\n"})
    _, (out,), _ = await grep(ws, mode, pattern="hello", output_mode="content", **{"-C": 1})
    assert out.split("\n") == [
        "a.txt:1:hello", "a.txt-2-world", "a.txt:3:hello again", "a.txt-4-x", "--",
        "a.txt-6-z", "a.txt:7:hello",
    ]  # fmt: skip
    _, (out,), _ = await grep(ws, mode, pattern="hello", output_mode="content", **{"-n": False})
    assert out.split("\n") == ["a.txt:hello", "a.txt:hello again", "a.txt:hello"]
    _, (out,), _ = await grep(ws, mode, pattern="HELLO AGAIN", output_mode="content", **{"-i": True})
    assert out == "a.txt:3:hello again"


async def test_single_file_search_still_prints_its_name(ws: Path, mode: str) -> None:
    tree(ws, {"sub/one.py": "x = 1\nx = 2\n"})
    _, (out,), _ = await grep(ws, mode, pattern="x", path="sub/one.py", output_mode="content")
    assert out == "one.py:1:x = 1\none.py:2:x = 2"
    _, (out, msg), facts = await grep(ws, mode, pattern="x", path="sub/one.py", output_mode="count_matches")
    assert out == "one.py:2" and msg == "Found 2 total occurrences across 1 files."
    assert facts and facts["total_matches"] == 2 and facts["files"] == 1


async def test_count_matches_totals(ws: Path, mode: str) -> None:
    tree(ws, {"a.txt": "aa a\n", "b/c.txt": "a\n"})
    _, (out, msg), _ = await grep(ws, mode, pattern="a", output_mode="count_matches")
    assert sorted(out.split("\n")) == ["a.txt:3", "b/c.txt:1"]
    assert msg == "Found 4 total occurrences across 2 files."


async def test_paging_with_offset_and_head_limit(ws: Path, mode: str) -> None:
    tree(ws, {"a.txt": "".join(f"m{i}\n" for i in range(10))})
    _, (out, msg), facts = await grep(ws, mode, pattern="m", output_mode="content", head_limit=3, offset=2)
    assert out.split("\n") == ["a.txt:3:m2", "a.txt:4:m3", "a.txt:5:m4"]
    assert msg == "Results truncated to 3 lines (total: 10). Use offset=5 to see more."
    assert facts and facts["next_offset"] == 5
    _, (out,), _ = await grep(ws, mode, pattern="m", output_mode="content", head_limit=0)
    assert out.count("\n") == 9


async def test_output_is_capped_at_50000_characters_and_long_lines_cut(ws: Path, mode: str) -> None:
    tree(ws, {"wide.txt": ("y" * 3000 + "\n") * 40})
    _, (out, msg), facts = await grep(ws, mode, pattern="y", output_mode="content", head_limit=0)
    assert len(out) <= 50_000
    assert all(len(line) <= 2000 + len("[...truncated]") for line in out.split("\n"))
    assert "Output is truncated to fit in the message." in msg
    assert facts and facts["output_truncated"]


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
        assert facts and facts["skipped_sensitive"] == 3
    err, parts, _ = await grep(ws, mode, pattern="TOKEN", path=".env", output_mode="content")
    assert "hunter2" not in "".join(parts) and "Skipped 1 sensitive file(s) (.env)" in parts[0]


async def test_vcs_folders_skipped_gitignore_respected_unless_asked(ws: Path, mode: str) -> None:
    tree(ws, {".git/config": "needle\n", ".gitignore": "build/\n", "build/out.txt": "needle\n",
              ".hidden.txt": "needle\n", "src.txt": "needle\n"})  # fmt: skip
    os.makedirs(ws / ".git" / "objects", exist_ok=True)
    _, (out,), _ = await grep(ws, mode, pattern="needle")
    assert sorted(out.split("\n")) == [".hidden.txt", "src.txt"]
    _, (out,), _ = await grep(ws, mode, pattern="needle", include_ignored=True)
    assert sorted(out.split("\n")) == [".hidden.txt", "build/out.txt", "src.txt"]


async def test_glob_and_type_filters(ws: Path, mode: str) -> None:
    tree(ws, {"a.py": "needle\n", "b.js": "needle\n", "c.ts": "needle\n"})
    _, (out,), _ = await grep(ws, mode, pattern="needle", glob="*.{js,ts}")
    assert sorted(out.split("\n")) == ["b.js", "c.ts"]
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
        ({"pattern": "("}, "Failed to grep. Error: rg: regex parse error"),
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
    monkeypatch.setattr(grep_module, "RG_TIMEOUT_S", 0.3)
    err, parts, facts = await grep(ws, mode, pattern="a", output_mode="content", head_limit=5)
    assert not err and parts[0].count("\n") == 4 and ".txt:1:a\n" in parts[0]
    assert "Grep timed out after 0.3s. Partial results returned." in parts[1]
    assert facts and facts["timed_out"]
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
