"""Grep's ignore rules as rg receives them (issue 26: mutation testing of tools/grep/walk.py and tools/search/ignores.py).

The rules of a `.gitignore` above the searched directory, or of one rg may not read itself, are
rewritten to be relative to the searched directory, and each file that may hold secrets is left
out by an anchored rule of its own name. The rewriting is checked line by line here; what rg
makes of the rules file is checked with the real rg."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from filegate.fsio import platform
from filegate.policy.workspace import Workspace
from filegate.tools.grep import plan as grep_plan
from filegate.tools.grep import rg as grep_rg
from filegate.tools.grep import walk as grep_walk
from filegate.tools.search.ignores import MAX_RULES_BYTES, read_rules, rules_at, rules_below
from tests.conftest import call, connect, texts

# One of each kind of gitignore line (gitignore(5)), comments and blanks between the rules.
LINES = [
    "*.log",  # no slash: any depth
    "# a comment",
    "",
    "   ",
    "!keep.log",  # negation
    "!!odd",  # only the first '!' negates
    "build/",  # directories only
    "/dist",  # anchored
    "src/gen/",  # a middle slash anchors too
    "**/tmp",  # any depth, explicitly
    "/",  # nothing left: no rule
    "!/",
    "trail   ",  # trailing spaces dropped
    "esc\\ ",  # unless escaped
    "  lead",  # leading spaces kept
    "/src/a/b",
    "/srcx/y",  # not under src/ although it starts with "src"
    "*/build",  # anchored, not expressible below one directory
    "/src",  # the searched directory itself
    "X//",  # trailing slashes, however many
]


@pytest.mark.parametrize(
    ("sub", "expected"),
    [
        ("", ["*.log", "!keep.log", "!!odd", "build/", "/dist", "/src/gen/", "**/tmp", "trail", "esc\\ ",
              "  lead", "/src/a/b", "/srcx/y", "/*/build", "/src", "X/"]),
        ("src", ["*.log", "!keep.log", "!!odd", "build/", "/gen/", "**/tmp", "trail", "esc\\ ", "  lead",
                 "/a/b", "X/"]),
        ("src/a", ["*.log", "!keep.log", "!!odd", "build/", "**/tmp", "trail", "esc\\ ", "  lead", "/b", "X/"]),
    ],
)  # fmt: skip
def test_a_parents_rules_are_rewritten_for_the_directory_below_it(sub: str, expected: list[str]) -> None:
    assert rules_below(LINES, sub) == expected


def test_a_tree_files_rules_are_anchored_at_its_own_directory() -> None:
    """Used when rg reads no ignore file itself (one of them is a link, or the walk ran out of time)."""
    assert rules_at(LINES, "") == rules_below(LINES, "")
    assert rules_at(LINES, "a/b") == [
        "/a/b/**/*.log", "!/a/b/**/keep.log", "!/a/b/**/!odd", "/a/b/**/build/", "/a/b/dist",
        "/a/b/src/gen/", "/a/b/**/tmp", "/a/b/**/trail", "/a/b/**/esc\\ ", "/a/b/**/  lead",
        "/a/b/src/a/b", "/a/b/srcx/y", "/a/b/*/build", "/a/b/src", "/a/b/**/X/",
    ]  # fmt: skip


def _rg_lists(top: Path, plan: grep_plan.IgnorePlan) -> list[str]:
    """What the real rg, given the plan's ignore flags, would search under ``top``."""
    rg = grep_rg.find_rg()
    assert rg is not None
    done = subprocess.run(
        [rg, "--no-config", "--files", "--hidden", *plan.args, "--glob", "!.git"],
        cwd=top, pass_fds=[plan.fd] if plan.fd is not None else [], capture_output=True, check=True,
    )  # fmt: skip
    return sorted(os.fsdecode(n) for n in done.stdout.splitlines())


def _plan(top: Path) -> grep_plan.IgnorePlan:
    grep_walk._REMEMBERED.clear()
    matcher = Workspace(workdir=top).secrets
    secrets = grep_walk.Secrets(str(top), matcher.is_sensitive, hash(matcher.patterns), matcher.patterns)
    return grep_plan.plan(os.open(top, os.O_RDONLY), top, [top], secrets, include_ignored=False)


# Names of files that may hold secrets, each holding a character a gitignore rule would read as
# syntax: taken as a glob, the rule for `x[1].pem` matches `x1.pem` and not itself.
SPECIAL_SECRETS = ["x[1].pem", "sub/y[ab].key", "{a,b}.pem", "back\\slash.pem", "id_rsa_ ", "#hash.pem",
                   "!bang.pem", "star*.pem", "q?.pem"]  # fmt: skip


@pytest.mark.parametrize("rules_in", ["memfd", "temp file"])
def test_rg_does_not_even_list_a_secret_whose_name_looks_like_a_glob(
    ws: Path, rules_in: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules file leaves each sensitive file out by its literal name, in rg's own call; a
    `.ignore` is not honoured (rg's flags say so whatever holds the rules)."""
    if rules_in == "temp file":  # a platform without memfd (macOS, Windows), simulated
        monkeypatch.delattr(os, "memfd_create", raising=False)
    for rel in [*SPECIAL_SECRETS, "plain.txt", "sub/plain.txt"]:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("needle\n")
    (ws / ".ignore").write_text("plain.txt\n")
    plan = _plan(ws)
    temp = plan.temp
    try:
        assert sorted(plan.sensitive) == sorted(SPECIAL_SECRETS)
        assert _rg_lists(ws, plan) == [".ignore", "plain.txt", "sub/plain.txt"]
        if rules_in == "temp file":
            assert plan.fd is None and temp is not None
            assert os.path.basename(temp).startswith("filegate-grep-") and temp.endswith(".ignore")
    finally:
        plan.close()
    assert temp is None or not os.path.exists(temp)


async def test_the_repositorys_anchored_exclude_rules_hold_at_its_top(ws: Path) -> None:
    """`.git/info/exclude` of the searched directory itself: its anchored rules stay anchored."""
    for rel in ("gen/a.txt", "docs/out/b.txt", "docs/keep.txt", "sub/gen/c.txt"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("needle\n")
    (ws / ".git" / "info").mkdir(parents=True)
    (ws / ".git" / "info" / "exclude").write_text("/gen\ndocs/out\n")
    async with connect(ws) as c:
        r = await call(c, "Grep", pattern="needle", output_mode="count_matches")
    assert texts(r)[0].splitlines() == ["docs/keep.txt:1", "sub/gen/c.txt:1"]
    async with connect(ws) as c:  # from below the top: `/gen` is the top's, not sub's
        r = await call(c, "Grep", pattern="needle", path="sub", output_mode="count_matches")
    assert texts(r)[0].splitlines() == ["sub/gen/c.txt:1"]


async def test_no_ignore_file_above_the_workspace_is_read(tmp_path: Path, ws: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.txt\n")  # the workspace's parent: not the user's
    (ws / "sub").mkdir()
    (ws / "sub" / "a.txt").write_text("needle\n")
    async with connect(ws) as c:
        r = await call(c, "Grep", pattern="needle", path="sub")
    assert texts(r)[0].splitlines() == ["sub/a.txt"]


async def test_a_parents_undecodable_line_does_not_cost_its_other_rules(ws: Path) -> None:
    """rg drops a whole rules file that is not UTF-8 ("stream did not contain valid UTF-8"): a
    line it cannot take (a Latin-1 name in a parent's `.gitignore`) is left out, the rest hold."""
    sub = ws / "sub"
    sub.mkdir()
    (ws / ".gitignore").write_bytes(b"sub/caf\xe9.txt\nsub/gen.txt\n")
    (sub / "gen.txt").write_text("needle\n")
    (sub / "plain.txt").write_text("needle\n")
    async with connect(ws) as c:
        r = await call(c, "Grep", pattern="needle", path="sub")
    assert not r.is_error and texts(r)[0].splitlines() == ["sub/plain.txt"]


def test_a_secret_with_an_undecodable_name_does_not_cost_the_other_secrets_rules(ws: Path) -> None:
    """Its rule cannot be said in UTF-8 (the parser's filter still drops what rg prints of it);
    the other secrets stay out of rg's search."""
    for name in (b"\xff.pem", b"a.pem", b"sub/.env", b"plain.txt"):
        (ws / os.fsdecode(name)).parent.mkdir(parents=True, exist_ok=True)
        (ws / os.fsdecode(name)).write_text("needle\n")
    plan = _plan(ws)
    try:
        assert len(plan.sensitive) == 3
        assert _rg_lists(ws, plan) == ["plain.txt", os.fsdecode(b"\xff.pem")]
    finally:
        plan.close()


def test_a_rules_file_of_the_largest_size_is_read_whole_and_a_byte_more_is_not(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    body = b"#" * (MAX_RULES_BYTES - len(b"\nlast")) + b"\nlast"  # no line break at its end
    rules.write_bytes(body)
    assert len(body) == MAX_RULES_BYTES
    lines = read_rules(str(rules))
    assert lines is not None and lines[-1] == "last"
    rules.write_bytes(body + b"x")
    assert read_rules(str(rules)) is None


@pytest.mark.parametrize("nofollow", ["posix", "none"])
def test_a_rules_file_is_read_by_its_name_in_an_open_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nofollow: str
) -> None:
    if not platform.has_dir_fd():
        pytest.skip("without dir_fd (FILEGATE_SIMULATE=no-dirfd) a name is read by its path only")
    if nofollow == "none":  # as on Windows: the name is checked before the open
        monkeypatch.setattr(platform, "NOFOLLOW", 0)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / ".gitignore").write_text("*.log\n")
    fd = os.open(tmp_path / "d", os.O_RDONLY)
    try:
        assert read_rules(".gitignore", fd) == ["*.log"]
    finally:
        os.close(fd)


def test_without_dir_fd_a_rules_file_behind_a_linked_directory_is_not_read(
    tmp_path: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there is no dir_fd (Windows) a rules file is opened by path and verified: no link
    anywhere on the way, not only at its last part."""
    monkeypatch.setenv(platform.SIMULATE_ENV, "no-dirfd")
    (outside / ".gitignore").write_text("*.log\n")
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / ".gitignore").write_text("build/\n")
    (tmp_path / "link").symlink_to(outside, target_is_directory=True)
    top = Path(os.path.realpath(tmp_path))
    assert read_rules(str(top / "real" / ".gitignore")) == ["build/"]
    assert read_rules(str(top / "link" / ".gitignore")) is None
