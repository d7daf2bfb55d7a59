"""Grep's walk of the searched tree, run directly on real trees (issue 26: mutation testing of
tools/grep/walk.py), and the fitting of result lines to the client's budget.

The walk vets each `.gitignore` rg may read itself and lists the files that may hold secrets;
it remembers what it listed per tree. What it found is checked here through its result; which
directories it listed, through the one call the walk makes per listed directory
(``Secrets.dir_may_hold``), recorded by a real ``SecretMatcher`` wrapped in a recorder. A
directory that vanishes, is swapped or becomes a link while it is walked is produced by the
same recorder, at the moment the walk asks about that directory: the race, made deterministic.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from filegate.fsio import platform
from filegate.policy.secrets import SecretMatcher
from filegate.policy.workspace import Workspace
from filegate.settings import Settings
from filegate.tools import grep
from filegate.tools.grep import plan as grep_plan
from filegate.tools.grep import walk as grep_walk
from filegate.tools.grep.params import GrepParams
from filegate.tools.grep.parse import fit_lines
from filegate.tools.grep.walk import Secrets, TreeIgnores, walk_tree
from filegate.tools.outcome import ToolEnv
from filegate.tools.search.ignores import MAX_RULES_BYTES, client_rules_of
from tests.conftest import call, connect, texts
from tests.fakes import FakeApprover
from tests.tools.test_grep_rules import _rg_lists

# Under FILEGATE_SIMULATE=no-dirfd (.ci/run) this process has no dir_fd at all: only the walk by
# path can run. Elsewhere both walks run.
NO_DIR_FD = not platform.has_dir_fd()
WALKS = ["by_path"] if NO_DIR_FD else ["by_fd", "by_path"]


class Recorder:
    """A real SecretMatcher that notes each directory the walk lists (relative, '' = the top)
    and may act once when the walk first asks about a given directory."""

    def __init__(self, top: Path, extra: tuple[str, ...] = ()) -> None:
        self.top = str(top)
        self.matcher = SecretMatcher(extra)
        self.listed: list[str] = []
        self.on_dir: dict[str, Callable[[], None]] = {}

    def is_sensitive(self, path: str) -> bool:
        if path.endswith("/\x01"):  # dir_may_hold: asked once per directory listed
            rel = path[len(self.top) + 1 : -2]
            self.listed.append(rel)
            action = self.on_dir.pop(rel, None)
            if action is not None:
                action()
        return self.matcher.is_sensitive(path)

    def secrets(self, key: int = 1) -> Secrets:
        return Secrets(self.top, self.is_sensitive, key, self.matcher.patterns)

    def walk(self, by_path: bool = NO_DIR_FD, key: int = 1) -> TreeIgnores:
        self.listed.clear()
        fd = os.open(self.top, os.O_RDONLY)
        try:
            return walk_tree(fd, self.secrets(key), top_path=self.top if by_path else None)
        finally:
            os.close(fd)


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(content)
    return root


@pytest.fixture(autouse=True)
def _forget_walks() -> None:
    grep_walk._REMEMBERED.clear()


SAMPLE = {
    ".gitignore": "*.log\n",
    "a/.env": "S\n",
    "a/b/.gitignore": "x\n",
    "a/b/k.txt": "k\n",
    "c/plain.txt": "p\n",
}


def test_what_the_walk_finds(ws: Path, outside: Path) -> None:
    """Every kind of entry it tells apart; a `.gitignore` of exactly 1 MiB is used, a byte more
    is not; a file is a secret by its directory alone (`.subversion/auth/`), and not by a name
    that only the last part of a path rule (`.kube/config`) matches; a link is not followed."""
    tree(
        ws, {**SAMPLE, ".subversion/auth/svn.simple/abc123": "pw\n", "config": "plain\n", "plain.txt": "p\n"}
    )
    for name, size in (("big", MAX_RULES_BYTES), ("bigger", MAX_RULES_BYTES + 1)):
        (ws / name).mkdir()
        with open(ws / name / ".gitignore", "wb") as f:
            f.truncate(size)
    (ws / "id_rsa").symlink_to(ws / "plain.txt")  # a secret's name, but a link: rg skips it
    (ws / "c" / "linked").symlink_to(outside, target_is_directory=True)
    (outside / ".env").write_text("OUTSIDE\n")
    found = Recorder(ws).walk()
    assert found.regular == ["", "a/b", "big"]  # a directory's rules before those below it
    assert found.unsafe == 1 and found.complete is True
    assert sorted(found.sensitive) == [".subversion/auth/svn.simple/abc123", "a/.env"]


def test_a_walk_without_secret_rules_vets_the_ignore_files_only(ws: Path) -> None:
    tree(ws, SAMPLE)
    (ws / "c" / ".gitignore").symlink_to("/dev/zero")
    fd = os.open(ws, os.O_RDONLY)
    try:
        found = walk_tree(fd, top_path=str(ws) if NO_DIR_FD else None)
    finally:
        os.close(fd)
    assert (found.regular, found.unsafe, found.sensitive, found.complete) == (["", "a/b"], 1, [], True)


def test_an_unchanged_tree_is_not_listed_again(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory whose ctime and inode are those of the last walk is taken from it (a stat
    instead of a listing); one that changed is listed anew, and what it holds now is found."""
    monkeypatch.setattr(grep_walk, "RACY_NS", 0)  # every directory old enough to be trusted
    tree(ws, SAMPLE)
    rec = Recorder(ws)
    first = rec.walk()
    assert sorted(rec.listed) == ["", "a", "a/b", "c"]
    assert rec.walk() == first and rec.listed == []
    time.sleep(0.05)  # past the tick of c's last change: its ctime moves (see RACY_NS)
    (ws / "c" / ".env").write_text("NEW\n")
    found = rec.walk()
    assert rec.listed == ["c"] and sorted(found.sensitive) == ["a/.env", "c/.env"]
    assert found.regular == first.regular
    rec.walk(key=2)  # other secret rules: nothing of the walk under the old ones is used
    assert sorted(rec.listed) == ["", "a", "a/b", "c"]


@pytest.mark.parametrize("walk", WALKS)
def test_a_remembered_gitignore_grown_past_the_limit_is_not_trusted(
    ws: Path, monkeypatch: pytest.MonkeyPatch, walk: str
) -> None:
    """Written in place, a `.gitignore` leaves its directory's ctime as it was: the walk must
    not take "regular and at most 1 MiB" from its memory (rg would read 4 GiB of one line)."""
    monkeypatch.setattr(grep_walk, "RACY_NS", 0)
    tree(ws, {".gitignore": "*.log\n", "a/.gitignore": "x\n", "a/b/k.txt": "k\n"})
    rec = Recorder(ws)
    assert rec.walk(by_path=walk == "by_path").regular == ["", "a"]
    os.truncate(ws / "a" / ".gitignore", 4 << 30)
    found = rec.walk(by_path=walk == "by_path")
    assert (found.regular, found.unsafe) == ([""], 1)
    assert rec.listed == ["a"]  # the other directories still taken from the walk before


async def test_grep_notices_a_gitignore_grown_since_its_last_search(
    ws: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same through the tool: the grown file is not used (nor handed to rg), and said so."""
    monkeypatch.setattr(grep_walk, "RACY_NS", 0)
    tree(ws, {"sub/.gitignore": "*.log\n", "sub/a.txt": "needle\n", "sub/b.log": "needle\n"})
    async with connect(ws, mode) as c:
        assert texts(await call(c, "Grep", pattern="needle")) == ["sub/a.txt"]
        os.truncate(ws / "sub" / ".gitignore", 4 << 30)
        r = await call(c, "Grep", pattern="needle")
    assert not r.is_error and sorted(texts(r)[0].split()) == ["sub/a.txt", "sub/b.log"]
    assert "1 .gitignore file(s) were not used" in texts(r)[1]


def test_a_directory_changed_within_the_timestamp_window_is_listed_again(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory may change again within the tick of its last ctime: one changed less than
    RACY_NS ago is never taken from a remembered walk."""
    monkeypatch.setattr(grep_walk, "RACY_NS", 60_000_000_000)
    tree(ws, SAMPLE)
    rec = Recorder(ws)
    rec.walk()
    rec.walk()
    assert sorted(rec.listed) == ["", "a", "a/b", "c"]


def test_the_least_recently_walked_tree_is_forgotten_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(grep_walk, "RACY_NS", 0)
    monkeypatch.setattr(grep_walk, "REMEMBER_TREES", 2)
    recs = [Recorder(tree(tmp_path / f"t{i}", {"d/x.txt": "x\n"})) for i in range(3)]
    recs[0].walk()
    recs[1].walk()
    recs[0].walk()  # used again: now the most recent
    assert recs[0].listed == []
    recs[2].walk()  # one tree too many: t1 goes
    recs[0].walk()
    assert recs[0].listed == []
    recs[1].walk()
    assert sorted(recs[1].listed) == ["", "d"]


def test_a_walk_over_its_entry_limit_is_incomplete_and_not_remembered(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each listed directory counts itself and its subdirectories: the top and two below it
    make 3 + 1 + 1 = 5 entries."""
    monkeypatch.setattr(grep_walk, "RACY_NS", 0)
    tree(ws, {"a/x.txt": "x\n", "b/y.txt": "y\n"})
    rec = Recorder(ws)
    monkeypatch.setattr(grep_walk, "WALK_MAX_ENTRIES", 4)
    assert rec.walk().complete is False
    monkeypatch.setattr(grep_walk, "WALK_MAX_ENTRIES", 5)
    assert rec.walk().complete is True
    assert sorted(rec.listed) == ["", "a", "b"]  # the incomplete walk was not remembered
    rec.walk()
    assert rec.listed == []


@pytest.mark.parametrize("remembered", [3, 2])
def test_a_walk_of_more_directories_than_remembered_is_not_kept(
    ws: Path, monkeypatch: pytest.MonkeyPatch, remembered: int
) -> None:
    monkeypatch.setattr(grep_walk, "RACY_NS", 0)
    monkeypatch.setattr(grep_walk, "REMEMBER_MAX_DIRS", remembered)
    tree(ws, {"a/x.txt": "x\n", "b/y.txt": "y\n"})  # three directories
    rec = Recorder(ws)
    rec.walk()
    rec.walk()
    assert len(rec.listed) == (0 if remembered == 3 else 3)


def _order(top: Path) -> list[str]:
    """The top's subdirectories in listing order: the walk goes on with the last first."""
    return [e.name for e in os.scandir(top) if e.is_dir(follow_symlinks=False)]


@pytest.mark.parametrize("walk", WALKS)
def test_directories_that_vanish_during_the_walk_do_not_end_it(ws: Path, walk: str) -> None:
    """Removed after the top was listed: the first one the walk enters (it cannot be opened),
    then the next one (it cannot be stat'ed). The others are still walked: their secrets found,
    their `.gitignore` vetted (one is a link), and the walk complete."""
    tree(ws, {f"d{i}/.env": "S\n" for i in range(5)})
    (ws / "d0" / ".gitignore").symlink_to("/dev/zero")
    *rest, after, first = _order(ws)
    rec = Recorder(ws)
    rec.on_dir[first] = lambda: [shutil.rmtree(ws / d) for d in (first, after)]
    found = rec.walk(by_path=walk == "by_path")
    assert sorted(found.sensitive) == sorted(f"{d}/.env" for d in rest)
    assert found.unsafe == (1 if "d0" in rest else 0) and found.complete is True


@pytest.mark.parametrize("walk", WALKS)
def test_a_directory_swapped_for_a_link_while_walked_is_not_entered(
    ws: Path, outside: Path, walk: str
) -> None:
    tree(ws, {"a/.env": "S\n", "b/.env": "S\n"})
    (outside / ".env").write_text("OUTSIDE\n")
    first = _order(ws)[-1]

    def swap() -> None:
        (ws / first).rename(ws / "moved")
        (ws / first).symlink_to(outside, target_is_directory=True)

    rec = Recorder(ws)
    rec.on_dir[first] = swap
    found = rec.walk(by_path=walk == "by_path")
    assert found.sensitive == [f"{({'a', 'b'} - {first}).pop()}/.env"] and found.complete is True


def test_a_directory_swapped_for_another_during_a_walk_by_path_stops_it(ws: Path) -> None:
    """Without dir_fd the walk cannot pin a directory: another one at its path (a different
    inode) means nothing below is trusted: the walk ends incomplete, so rg reads no
    `.gitignore` itself."""
    tree(ws, {"a/.env": "S\n", "b/.env": "S\n"})
    first = _order(ws)[-1]

    def swap() -> None:
        (ws / first).rename(ws / "moved")
        (ws / first).mkdir()

    rec = Recorder(ws)
    rec.on_dir[first] = swap
    found = rec.walk(by_path=True)
    assert found.complete is False and rec.listed == ["", first]


@pytest.mark.skipif(
    NO_DIR_FD, reason="opened only in the walk by descriptor (by path: a FIFO is no directory by its lstat)"
)
def test_a_directory_swapped_for_a_fifo_is_not_waited_on(ws: Path) -> None:
    """Opened as a directory only (O_DIRECTORY): a FIFO opened as a file would wait for a writer."""
    tree(ws, {"a/.env": "S\n", "b/.env": "S\n"})
    first = _order(ws)[-1]
    fifo = ws / first

    def swap() -> None:
        fifo.rename(ws / "moved")
        os.mkfifo(fifo)

    rec = Recorder(ws)
    rec.on_dir[first] = swap
    result: list[TreeIgnores] = []
    walker = threading.Thread(target=lambda: result.append(rec.walk()), daemon=True)
    walker.start()
    walker.join(20)
    if walker.is_alive():  # opened as a file: release it, then fail
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        walker.join(5)
        pytest.fail("the walk waited on a FIFO that replaced a directory")
    assert result[0].sensitive == [f"{({'a', 'b'} - {first}).pop()}/.env"]


def test_the_name_filter_without_path_rules_clears_other_names() -> None:
    secrets = Secrets("/r", SecretMatcher().is_sensitive, 0, ("*.pem", ".env"))
    assert not secrets.may_be("plain.py") and secrets.may_be("x.pem")


def test_the_name_filter_compares_a_decomposed_name_composed() -> None:
    """A path rule's last part in NFC (`dir/Café.md`) matches the NFD spelling of the name."""
    matcher = SecretMatcher(["dir/Café.md"])
    secrets = Secrets("/r", matcher.is_sensitive, 0, matcher.patterns)
    decomposed = "Cafe\u0301.md"
    assert matcher.is_sensitive(f"/r/dir/{decomposed}") and not matcher.is_sensitive(decomposed)
    assert secrets.may_be(decomposed)


def test_result_lines_are_taken_whole_while_they_fit() -> None:
    """n lines take their lengths plus n - 1 line breaks; a line over 2,000 characters is cut
    to 2,000, marker included, and said to be cut."""
    assert fit_lines([], 10) == ([], False)
    assert fit_lines(["ab", "cd"], 5) == (["ab", "cd"], False)
    assert fit_lines(["ab", "cd"], 4) == (["ab"], False)
    assert fit_lines(["ab"], 2) == (["ab"], False)
    assert fit_lines(["ab"], 1) == ([], False)
    assert fit_lines(["x" * 2000], 2000) == (["x" * 2000], False)
    cut = "x" * (2000 - len("[...truncated]")) + "[...truncated]"
    assert fit_lines(["x" * 2001, "ab"], 2003) == ([cut, "ab"], True)
    assert fit_lines(["x" * 2001, "ab"], 2002) == ([cut], True)


def _plan(top: Path, workspace: Path, include_ignored: bool) -> grep_plan.IgnorePlan:
    matcher = Workspace(workdir=workspace).secrets
    secrets = Secrets(str(top), matcher.is_sensitive, hash(matcher.patterns), matcher.patterns)
    return grep_plan.plan(os.open(top, os.O_RDONLY), top, [workspace], secrets, include_ignored)


# rg's view of a tree where one `.gitignore` is a link (rg must read none itself), one is
# regular, and the workspace's own sits above the searched directory.
LINKED = {".gitignore": "*.tmp\n", "sub/.env": "S\n", "sub/a/.gitignore": "*.log\n/gen\n", "sub/a/x.log": "",
          "sub/a/y.txt": "", "sub/a/gen/g.txt": "", "sub/gen/top.txt": "", "sub/z.log": "", "sub/w.tmp": ""}  # fmt: skip


@pytest.mark.parametrize("walk", ["by_fd", "by_path"])
def test_where_rg_may_read_no_gitignore_the_regular_ones_reach_it_as_rules(
    ws: Path, walk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Their rules come anchored at their own directories in the rules file; read by path where
    there is no dir_fd (simulated: the plan reads the platform at call time)."""
    if walk == "by_path":
        monkeypatch.setenv(platform.SIMULATE_ENV, "no-dirfd")
    tree(ws, LINKED)
    (ws / "sub" / "b").mkdir()
    (ws / "sub" / "b" / ".gitignore").symlink_to("/dev/zero")
    plan = _plan(ws / "sub", ws, include_ignored=False)
    try:
        assert "--no-ignore-vcs" in plan.args and plan.unsafe == 1 and plan.sensitive == [".env"]
        assert _rg_lists(ws / "sub", plan) == ["a/.gitignore", "a/y.txt", "gen/top.txt", "z.log"]
    finally:
        plan.close()


def _rules_text(plan: grep_plan.IgnorePlan) -> str:
    """The rules file the plan hands rg (a memfd, or a named temp where there is none)."""
    if plan.fd is not None:
        return os.pread(plan.fd, MAX_RULES_BYTES, 0).decode()
    assert plan.temp is not None
    return Path(plan.temp).read_text()


def test_where_every_gitignore_is_a_regular_file_rg_reads_them_itself(ws: Path) -> None:
    """Their rules are not copied into the rules file (rg reads them, as fast as it can): only
    the rules from above the searched directory and the secrets are. A plan closed twice (the
    walk and the search may both close it) is closed once."""
    tree(ws, LINKED)
    plan = _plan(ws / "sub", ws, include_ignored=False)
    try:
        assert "--no-ignore-vcs" not in plan.args and plan.unsafe == 0 and plan.sensitive == [".env"]
        text = _rules_text(plan)
        assert "*.tmp" in text and "/.env" in text and "*.log" not in text and "gen" not in text
        assert _rg_lists(ws / "sub", plan) == ["a/.gitignore", "a/y.txt", "gen/top.txt", "z.log"]
    finally:
        plan.close()
    plan.close()
    assert plan.fd is None and plan.temp is None


def test_include_ignored_leaves_out_the_secrets_only(ws: Path) -> None:
    """No `.gitignore` is used, above the searched directory or in it, and none is said to be
    unused; the secrets stay out (grep_rg adds --no-ignore, which keeps the rules file)."""
    tree(ws, LINKED)
    (ws / "sub" / "b").mkdir()
    (ws / "sub" / "b" / ".gitignore").symlink_to("/dev/zero")
    plan = _plan(ws / "sub", ws, include_ignored=True)
    try:
        assert "--no-ignore-vcs" not in plan.args and plan.unsafe == 0
        plan.args.append("--no-ignore")
        assert _rg_lists(ws / "sub", plan) == [
            "a/.gitignore", "a/gen/g.txt", "a/x.log", "a/y.txt", "gen/top.txt", "w.tmp", "z.log"
        ]  # fmt: skip
    finally:
        plan.close()


def _rules_files_open() -> int:
    """Rules files (memfds) this process holds open."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            n += "filegate-grep-ignore" in os.readlink(f"/proc/self/fd/{fd}")
    return n


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
@pytest.mark.parametrize("searched_before", [False, True])
async def test_a_search_cancelled_during_its_walk_leaves_no_rules_file_open(
    ws: Path, monkeypatch: pytest.MonkeyPatch, searched_before: bool
) -> None:
    """The walk runs to its end when the call is cancelled (its budget bounds it); the plan it
    makes (with a rules file: .env is left out) is closed then. Called in process, so that the
    cancellation is certain to reach the call. Searched before: the walk reuses the last one."""
    tree(ws, {"a/x.txt": "needle\n", "a/.env": "needle\n"})
    env = ToolEnv(workspace=Workspace(workdir=ws), approver=FakeApprover(ws))
    params = GrepParams(pattern="needle")
    if searched_before:
        await grep.grep(params, env)
    real_plan = grep_plan.plan
    finished = threading.Event()

    def slow_plan(*args: Any) -> Any:
        time.sleep(0.5)
        try:
            return real_plan(*args)
        finally:
            finished.set()

    before = _rules_files_open()
    monkeypatch.setattr(grep_plan, "plan", slow_plan)
    with anyio.move_on_after(0.2) as scope:
        await grep.grep(params, env)
    assert scope.cancelled_caught
    assert finished.wait(5)
    await anyio.sleep(0.2)
    assert _rules_files_open() == before


@pytest.mark.parametrize("walk", WALKS)
def test_client_rules_judge_whole_paths_only_where_one_can_hide(tmp_path: Path, walk: str) -> None:
    """SPEC §8.5 at a search's cost (issue 38): a folder under a `.cursorignore` has each file's
    whole path judged; one no client rule can reach is cleared by name, as with the rules off.
    Both walks find the same hidden file."""
    top = Path(os.path.realpath(tmp_path))
    tree(
        top, {"hid/.cursorignore": "*.zq\n", "hid/a.zq": "", "hid/b.py": "", "free/c.zq": "", "free/d.py": ""}
    )
    client = client_rules_of(Settings(workdir=top))
    assert client is not None
    matcher = SecretMatcher((), client)
    client.check()
    judged: list[str] = []

    def is_sensitive(path: str) -> bool:
        if not path.endswith("\x01") and path.startswith("/"):
            judged.append(path[len(str(top)) + 1 :])
        return matcher.is_sensitive(path)

    fd = os.open(top, os.O_RDONLY)
    try:
        secrets = Secrets(str(top), is_sensitive, 7, matcher.patterns, client.may_hide_in)
        found = walk_tree(fd, secrets, top_path=str(top) if walk == "by_path" else None)
    finally:
        os.close(fd)
    assert found.sensitive == ["hid/a.zq"]
    assert sorted(judged) == ["hid/.cursorignore", "hid/a.zq", "hid/b.py"]
