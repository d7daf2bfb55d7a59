"""Client roots narrow the workspace (handshake era) and never widen it."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import call, connect, text


async def test_roots_narrow_the_workspace_in_the_handshake_era(ws: Path, outside: Path) -> None:
    (ws / "allowed").mkdir()
    (ws / "allowed" / "a.txt").write_text("ALLOWED\n")
    (ws / "other.txt").write_text("OTHER\n")
    roots = [(ws / "allowed").as_uri(), outside.as_uri()]
    async with connect(ws, "legacy", confine=True, client_roots=roots) as c:
        r = await call(c, "ReadFile", path="allowed/a.txt")
        assert not r.is_error and "ALLOWED" in text(r)
        r = await call(c, "ReadFile", path="other.txt")  # inside workdir, outside the roots
        assert r.is_error and "OTHER" not in text(r)
        r = await call(c, "ReadFile", path=str(outside / "secret.txt"))  # a root never widens
        assert r.is_error and "OUTSIDE" not in text(r)
        r = await call(c, "Grep", pattern="OTHER|ALLOWED", path=str(ws / "allowed"), output_mode="content")
        assert "ALLOWED" in text(r) and "OTHER" not in text(r)
        # twice: the answer is remembered for the session, the rule stays the same
        r = await call(c, "ReadFile", path="other.txt")
        assert r.is_error


async def test_roots_cannot_widen_in_either_era(ws: Path, outside: Path, mode: str) -> None:
    async with connect(ws, mode, confine=True, client_roots=[outside.as_uri(), "file:///"]) as c:
        r = await call(c, "ReadFile", path=str(outside / "secret.txt"))
        assert r.is_error and "OUTSIDE" not in text(r)
        r = await call(c, "Glob", pattern="*", directory=str(outside))
        assert r.is_error and "secret" not in text(r)


async def test_changed_roots_are_asked_for_again(ws: Path) -> None:
    for name in ("one", "two"):
        (ws / name).mkdir()
        (ws / name / "f.txt").write_text(f"{name.upper()}\n")
    current = [(ws / "one").as_uri()]
    async with connect(ws, "legacy", client_roots=lambda _ctx: list(current)) as c:
        assert not (await call(c, "ReadFile", path="one/f.txt")).is_error
        assert (await call(c, "ReadFile", path="two/f.txt")).is_error
        current[:] = [(ws / "two").as_uri()]
        await c.send_roots_list_changed()
        r = await call(c, "ReadFile", path="two/f.txt")
        assert not r.is_error and "TWO" in text(r)
        assert (await call(c, "ReadFile", path="one/f.txt")).is_error
