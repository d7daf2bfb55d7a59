"""Write ids (SPEC §8.4, issue 53 item 10): 64 random bits (`w-` and 16 hex digits), whole ids
only for the tools, a unique prefix of at least six digits at the terminal, older six-digit ids
still resolving; a server answers an id from outside its workspace exactly as an unknown one.

The red team's case: ids were six hex digits shared by every server on the state directory, a
`--confine` server given another workspace's id answered with that file's absolute path, and an
unknown id answered differently, so a guess hit every 20–35 s with 1,000 writes in the history.
Real servers on a shared state directory, real files.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import time
from pathlib import Path

import pytest

from filegate.fsio.history import history_dir
from filegate.history_cli import main as history_main
from tests.conftest import call, connect, text, write_id_of

ID_TEXT = re.compile(r"w-[0-9a-f]+")


async def test_a_write_id_is_64_random_bits(ws: Path) -> None:
    async with connect(ws, approval="auto", read_guard=False) as c:
        said = [text(await call(c, "WriteFile", path=f"f{i}.txt", content="x\n")) for i in range(20)]
    ids = [s.rsplit(" Write id: ", 1)[1].rstrip(".") for s in said]
    assert all(re.fullmatch(r"w-[0-9a-f]{16}", i) for i in ids), ids
    assert len(set(ids)) == 20
    # 64 bits drawn, not a counter or a clock: every hex digit position varies across 20 draws.
    assert all(len({i[2 + k] for i in ids}) > 1 for k in range(16)), ids


async def _project(root: Path, name: str) -> tuple[Path, str]:
    """A workspace with one file written through a server (its own), and that write's id."""
    ws = root / name
    ws.mkdir()
    (ws / f"{name}-secret-name.txt").write_text(f"{name} before\n")
    async with connect(ws, approval="auto", read_guard=False, confine=True) as c:
        w = await call(c, "WriteFile", path=f"{name}-secret-name.txt", content=f"{name} after\n")
    return ws, write_id_of(text(w))


@pytest.mark.parametrize("confine", [True, False])
async def test_another_workspaces_id_is_answered_as_an_unknown_one(tmp_path: Path, confine: bool) -> None:
    """Two projects share the state directory (as every server of one user does). Project B's
    server, given project A's id, answers exactly as for an id no write has: the same text with
    the id swapped, naming nothing of A (its path, its file's name), nothing written."""
    root = Path(os.path.realpath(tmp_path))
    a, a_id = await _project(root, "alpha")
    b, _ = await _project(root, "beta")
    unknown_id = "w-" + ("0123456789abcdef" if a_id != "w-0123456789abcdef" else "fedcba9876543210")
    async with connect(b, approval="auto", confine=confine) as c:
        theirs = await call(c, "UndoWrite", write_id=a_id)
        none = await call(c, "UndoWrite", write_id=unknown_id)
        theirs_dry = await call(c, "UndoWrite", write_id=a_id, dry_run=True, force=True)
    assert theirs.is_error and none.is_error
    assert text(theirs).replace(a_id, "ID") == text(none).replace(unknown_id, "ID"), (
        text(theirs),
        text(none),
    )
    assert text(theirs_dry).replace(a_id, "ID") == text(none).replace(unknown_id, "ID")
    for said in (text(theirs), text(theirs_dry), json.dumps(theirs.structured_content or {})):
        assert "alpha" not in said and str(root) not in said, said
    assert (a / "alpha-secret-name.txt").read_text() == "alpha after\n"


async def test_another_workspaces_id_takes_as_long_as_an_unknown_one(tmp_path: Path) -> None:
    """The same steps, so the same time: alternated calls, medians compared with room for a
    loaded machine (a difference of the red team's kind, a path resolved and refused against
    nothing done, would show as a factor)."""
    root = Path(os.path.realpath(tmp_path))
    _, a_id = await _project(root, "alpha")
    b, _ = await _project(root, "beta")
    unknown_id = "w-" + "5" * 16
    took: dict[str, list[float]] = {a_id: [], unknown_id: []}
    async with connect(b, approval="auto", confine=True) as c:
        for _ in range(3):  # warm
            await call(c, "UndoWrite", write_id=a_id)
            await call(c, "UndoWrite", write_id=unknown_id)
        for i in range(61):
            for write_id in (a_id, unknown_id) if i % 2 else (unknown_id, a_id):
                began = time.perf_counter()
                await call(c, "UndoWrite", write_id=write_id)
                took[write_id].append(time.perf_counter() - began)
    theirs, none = statistics.median(took[a_id]), statistics.median(took[unknown_id])
    assert theirs < none * 1.5 + 0.001 and none < theirs * 1.5 + 0.001, (theirs, none, os.getloadavg())


async def test_the_tools_take_whole_ids_only(ws: Path) -> None:
    (ws / "a.txt").write_text("before\n")
    async with connect(ws, approval="auto", read_guard=False) as c:
        write_id = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="after\n")))
        for given in (write_id[:8], write_id[2:], write_id.upper(), write_id[:-1], "3f9a2c"):
            r = await call(c, "UndoWrite", write_id=given)
            assert r.is_error, (given, text(r))
            assert "not a write id" in text(r) or "No write" in text(r), (given, text(r))
        assert (ws / "a.txt").read_text() == "after\n"
        r = await call(c, "UndoWrite", write_id=f"  {write_id} ")
        assert not r.is_error, text(r)
    assert (ws / "a.txt").read_text() == "before\n"


async def test_a_six_digit_id_of_an_older_history_still_resolves(ws: Path) -> None:
    """A history written before ids grew keeps its ids: its lines say w- and six digits."""
    (ws / "a.txt").write_text("before\n")
    async with connect(ws, approval="auto", read_guard=False) as c:
        new_id = write_id_of(text(await call(c, "WriteFile", path="a.txt", content="after\n")))
    log = history_dir() / "history.jsonl"
    older = log.with_name("older.jsonl")
    older.write_text(log.read_text().replace(new_id, "w-3f9a2c"))
    os.replace(older, log)
    async with connect(ws, approval="auto", read_guard=False) as c:
        r = await call(c, "UndoWrite", write_id="w-3f9a2c")
    assert not r.is_error and "Undid w-3f9a2c" in text(r), text(r)
    assert (ws / "a.txt").read_text() == "before\n"


# --- the terminal: a unique prefix of at least six digits ------------------------------------


async def _writes(ws: Path, n: int) -> list[str]:
    async with connect(ws, approval="auto", read_guard=False) as c:
        return [
            write_id_of(text(await call(c, "WriteFile", path=f"f{i}.txt", content=f"{i}\n")))
            for i in range(n)
        ]


@pytest.mark.parametrize("form", ["whole", "digits", "w-prefix", "prefix", "upper", "upper-w"])
def test_the_terminal_takes_a_unique_prefix_in_either_case(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    [write_id] = asyncio.run(_writes(ws, 1))
    digits = write_id[2:]
    given = {
        "whole": write_id,
        "digits": digits,
        "w-prefix": write_id[:8],
        "prefix": digits[:7],
        "upper": digits[:6].upper(),
        "upper-w": "W-" + digits[:10].upper(),
    }[form]
    monkeypatch.chdir(ws)
    assert history_main(["undo", given, "--yes"]) == 0, capsys.readouterr()
    assert f"Undid {write_id}:" in capsys.readouterr().out
    assert not (ws / "f0.txt").exists()


def test_the_terminal_refuses_a_short_ambiguous_or_unknown_prefix(
    ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    ids = asyncio.run(_writes(ws, 2))
    monkeypatch.chdir(ws)
    assert history_main(["undo", ids[0][2:7], "--yes"]) == 1  # five digits
    said = capsys.readouterr()
    assert "at least its first 6 digits" in said.err and said.out == ""
    # Two ids that share their first six digits: an older history's and a new one's.
    log = history_dir() / "history.jsonl"
    log.write_text(log.read_text().replace(ids[1], ids[0][:8]))
    assert history_main(["undo", ids[0][:8], "--yes"]) == 1
    said = capsys.readouterr()
    assert f"2 writes have ids starting {ids[0][2:8]}" in said.err and "Give more digits" in said.err
    assert history_main(["undo", ids[0][:12], "--yes"]) == 0, capsys.readouterr()
    capsys.readouterr()
    assert history_main(["undo", "abcdef0", "--yes"]) == 1
    assert "No write w-abcdef0 in the history" in capsys.readouterr().err
    assert history_main(["undo", "zz" * 4, "--yes"]) == 1
    assert "is not a write id" in capsys.readouterr().err
    assert (ws / "f1.txt").exists() and not (ws / "f0.txt").exists()


def test_the_terminal_undoes_a_write_of_any_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The user at the terminal owns every write the state directory holds, wherever they stand
    (a tool sees its own workspace's only)."""
    root = Path(os.path.realpath(tmp_path))
    a, a_id = asyncio.run(_project(root, "alpha"))
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert history_main(["undo", a_id[:10], "--yes"]) == 0, capsys.readouterr()
    assert (a / "alpha-secret-name.txt").read_text() == "alpha before\n"
    assert ID_TEXT.search(capsys.readouterr().out)
