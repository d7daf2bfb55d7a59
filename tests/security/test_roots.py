"""Client roots that try to widen the workspace (SPEC §2.8: roots only ever narrow).

Handshake era: filegate asks the client for its roots and intersects them with the workspace.
2026-07-28 era: roots are deprecated and never asked for; whatever the client offers, the
workspace is the server's own. Either way, no root lets a call reach outside.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import call, connect
from tests.security.attack import (
    OUTSIDE_CANARY,
    PWNED,
    SECRET_CANARY,
    Layout,
    build_layout,
    leaks,
    result_payload,
    snapshot,
)


@pytest.fixture
def lay(tmp_path: Path) -> Layout:
    layout = build_layout(tmp_path)
    os.symlink(layout.outside, layout.ws / "to-outside")
    (layout.ws / "allowed").mkdir()
    (layout.ws / "allowed" / "a.txt").write_text("ALLOWED\n")
    return layout


def widening_roots(lay: Layout) -> dict[str, list[str]]:
    """Root lists a client could offer to reach the outside directory."""
    return {
        "filesystem-root": ["file:///"],
        "the-outside-dir": [lay.outside.as_uri()],
        "the-parent-of-the-workspace": [lay.base.as_uri()],
        "dotdot-in-the-uri": [f"file://{lay.ws}/../outside"],
        "percent-encoded-dotdot": [lay.ws.as_uri() + "/%2e%2e/outside"],
        "symlink-inside-pointing-out": [(lay.ws / "to-outside").as_uri()],
        "prefix-sibling": [lay.evil.as_uri()],
        "nfd-twin": [lay.nfd.as_uri()],
        "proc-self-root": [f"file:///proc/self/root{lay.outside}"],
        "workspace-plus-outside": [lay.ws.as_uri(), lay.outside.as_uri(), "file:///"],
    }


ROOT_CASES = [
    "filesystem-root",
    "the-outside-dir",
    "the-parent-of-the-workspace",
    "dotdot-in-the-uri",
    "percent-encoded-dotdot",
    "symlink-inside-pointing-out",
    "prefix-sibling",
    "nfd-twin",
    "proc-self-root",
    "workspace-plus-outside",
]


async def _attack(lay: Layout, mode: str, confine: bool, roots: list[str]) -> list[str]:
    problems: list[str] = []
    calls = [
        ("ReadFile", {"path": str(lay.outside / "plain.txt")}),
        ("ReadFile", {"path": "to-outside/plain.txt"}),
        ("ReadFile", {"path": "../outside/plain.txt"}),
        ("ReadMediaFile", {"path": "../outside/pic.png"}),
        ("Grep", {"pattern": "CANARY", "path": str(lay.outside), "output_mode": "content"}),
        ("Grep", {"pattern": "CANARY", "path": "../outside", "output_mode": "content"}),
        ("Glob", {"pattern": "*", "directory": str(lay.outside)}),
        ("Glob", {"pattern": "to-outside/*"}),
        ("WriteFile", {"path": str(lay.outside / "plain.txt"), "content": PWNED}),
        ("WriteFile", {"path": "../outside/new.txt", "content": PWNED}),
        ("StrReplaceFile", {"path": "to-outside/plain.txt", "edit": {"old": OUTSIDE_CANARY, "new": PWNED}}),
    ]
    kw = {"confine": True, "approval": "auto"} if confine else {"confine": False, "approval": "ask"}
    async with connect(lay.ws, mode, client_roots=roots, **kw) as c:
        for tool, args in calls:
            r = await call(c, tool, **args)
            found = leaks(r)
            absolute = str(args.get("path", args.get("directory", ""))).startswith("/")
            allowed_read = not confine and absolute and tool in ("ReadFile", "ReadMediaFile", "Grep")
            if SECRET_CANARY in found or (OUTSIDE_CANARY in found and not allowed_read):
                problems.append(f"{tool}({args}) leaked {found}")
            if "Traceback" in result_payload(r) or "Error calling tool" in result_payload(r):
                problems.append(f"{tool}({args}) crashed")
    return problems


@pytest.mark.parametrize("confine", [True, False], ids=["confined", "unconfined"])
@pytest.mark.parametrize("name", ROOT_CASES)
async def test_roots_offered_to_widen_the_workspace_reach_nothing_outside(
    lay: Layout, name: str, confine: bool
) -> None:
    before = snapshot(*lay.outside_dirs)
    # The handshake era is where roots are asked for; the modern era gets the same roots offered.
    mode = "legacy" if (ROOT_CASES.index(name) + confine) % 2 == 0 else "auto"
    problems = await _attack(lay, mode, confine, widening_roots(lay)[name])
    assert not problems, "\n".join(problems)
    assert snapshot(*lay.outside_dirs) == before


async def test_roots_that_only_name_outside_directories_leave_nothing_readable_inside(lay: Layout) -> None:
    """The intersection is empty: the handshake-era client may read nothing at all."""
    async with connect(lay.ws, "legacy", confine=True, client_roots=[lay.outside.as_uri()]) as c:
        inside = await call(c, "ReadFile", path="allowed/a.txt")
        outside = await call(c, "ReadFile", path=str(lay.outside / "plain.txt"))
    assert inside.is_error and "ALLOWED" not in result_payload(inside)
    assert outside.is_error and OUTSIDE_CANARY not in result_payload(outside)


async def test_glob_without_directory_stays_within_narrowing_roots(lay: Layout) -> None:
    """Glob's default directory is the workdir; when roots exclude it, Glob may not list it."""
    (lay.ws / "other.txt").write_text("OTHER\n")
    async with connect(lay.ws, "legacy", confine=True, client_roots=[(lay.ws / "allowed").as_uri()]) as c:
        listed = await call(c, "Glob", pattern="*")
        inside_roots = await call(c, "Glob", pattern="*", directory=str(lay.ws / "allowed"))
    assert "other.txt" not in result_payload(listed) and "plain.txt" not in result_payload(listed)
    assert listed.is_error
    assert "a.txt" in result_payload(inside_roots)


async def test_modern_era_ignores_offered_roots_so_they_neither_widen_nor_narrow(lay: Layout) -> None:
    """On 2026-07-28 roots are deprecated: filegate does not ask, the workspace is its own."""
    (lay.ws / "other.txt").write_text("OTHER\n")
    roots = [(lay.ws / "allowed").as_uri(), lay.outside.as_uri()]
    async with connect(lay.ws, "auto", confine=True, client_roots=roots) as c:
        other = await call(c, "ReadFile", path="other.txt")  # outside the roots, inside the workdir
        out = await call(c, "ReadFile", path=str(lay.outside / "plain.txt"))
    assert not other.is_error and "OTHER" in result_payload(other)
    assert out.is_error and OUTSIDE_CANARY not in result_payload(out)
