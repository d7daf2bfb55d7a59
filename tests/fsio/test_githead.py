"""fsio/githead.py, the one reader of git (SPEC §10 Changes `against: "HEAD"`): real git, real
repositories in tmp_path. What HEAD holds is read from the commit, never the work tree; odd
names, links, folders and large blobs are told apart; git's refusals, silence and absence are
one exception with a sentence; nothing in the caller's environment steers it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from filegate.fsio import githead
from filegate.fsio.githead import GitUnreadable, HeadFile, find_top, head_files, open_repo

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "core.hooksPath=/dev/null"]
pytestmark = pytest.mark.skipif(githead.git_path() is None, reason="git is not installed")


def git(repo: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q")
    return top


def commit(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "c")


def files(repo: Path, *names: str) -> dict[str, HeadFile]:
    found = head_files(githead.git_path() or "git", open_repo(githead.git_path() or "git", repo),
                       [repo / n for n in names])  # fmt: skip
    return {str(p.relative_to(repo)): f for p, f in found.items()}


def test_head_is_read_from_the_commit_not_the_work_tree(repo: Path) -> None:
    (repo / "a.txt").write_text("one\n")
    (repo / "sub").mkdir()
    (repo / "sub" / "b.txt").write_text("bee\n")
    commit(repo)
    (repo / "a.txt").write_text("two, changed\n")
    (repo / "new.txt").write_text("new\n")
    assert files(repo, "a.txt", "sub/b.txt", "new.txt") == {
        "a.txt": HeadFile("blob", 4, b"one\n"),
        "sub/b.txt": HeadFile("blob", 4, b"bee\n"),
        "new.txt": HeadFile("absent"),
    }


def test_a_repository_without_a_commit_holds_nothing(repo: Path) -> None:
    (repo / "a.txt").write_text("one\n")
    found = open_repo("git", repo)
    assert found.head == "" and found.top == Path(os.path.realpath(repo))
    assert files(repo, "a.txt") == {"a.txt": HeadFile("absent")}


def test_a_link_and_a_folder_are_told_apart_and_never_read(repo: Path) -> None:
    (repo / "target.txt").write_text("t\n")
    os.symlink("target.txt", repo / "link")
    (repo / "dir").mkdir()
    (repo / "dir" / "x").write_text("x")
    commit(repo)
    found = files(repo, "link", "dir")
    assert found == {"link": HeadFile("link", len("target.txt")), "dir": HeadFile("other")}


def test_odd_names_come_back_whole(repo: Path) -> None:
    names = ["with space.txt", "tab\there.txt", "new\nline.txt", "caf\udce9.txt", "-dash.txt", "*.txt"]
    for n in names:
        (repo / n).write_bytes(os.fsencode(n))
    commit(repo)
    found = files(repo, *names)
    assert found == {n: HeadFile("blob", len(os.fsencode(n)), os.fsencode(n)) for n in names}


def test_blobs_past_the_bounds_are_sized_not_read(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One blob over BLOB_MAX_BYTES, and the blobs of one call over BLOBS_MAX_BYTES together:
    their size said, their bytes not read (bounds made small here: the real ones are MiB)."""
    monkeypatch.setattr(githead, "BLOB_MAX_BYTES", 10)
    monkeypatch.setattr(githead, "BLOBS_MAX_BYTES", 16)
    (repo / "big").write_bytes(b"b" * 11)
    (repo / "at").write_bytes(b"a" * 10)
    (repo / "more").write_bytes(b"m" * 6)
    (repo / "over").write_bytes(b"o" * 7)
    commit(repo)
    found = files(repo, "big", "at", "more", "over")
    assert found["big"] == HeadFile("blob", 11)  # past one blob's bound
    assert found["at"] == HeadFile("blob", 10, b"a" * 10)  # at it: read
    read = {n for n in ("more", "over") if found[n].data is not None}
    assert len(read) == 1, found  # 10 + 6 = 16 fits the call's bound, 10 + 7 does not
    assert found["more"] == HeadFile("blob", 6, b"m" * 6)
    assert found["over"] == HeadFile("blob", 7)


def test_many_paths_are_asked_in_runs(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(githead, "PATHS_PER_RUN", 2)
    names = [f"f{i}.txt" for i in range(5)]
    for n in names:
        (repo / n).write_text(n)
    commit(repo)
    assert files(repo, *names, "gone.txt") == {
        **{n: HeadFile("blob", len(n), n.encode()) for n in names},
        "gone.txt": HeadFile("absent"),
    }


def test_the_callers_git_variables_do_not_steer_it(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "a.txt").write_text("OTHER\n")
    commit(other)
    (repo / "a.txt").write_text("mine\n")
    commit(repo)
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    assert files(repo, "a.txt") == {"a.txt": HeadFile("blob", 5, b"mine\n")}


def test_the_top_is_the_nearest_folder_holding_a_git_entry(repo: Path, tmp_path: Path) -> None:
    (repo / "a" / "b").mkdir(parents=True)
    assert find_top(repo / "a" / "b") == repo and find_top(repo) == repo
    linked = repo / "a" / "wt"
    linked.mkdir()
    (linked / ".git").write_text("gitdir: /nowhere\n")  # a linked worktree's .git is a file
    assert find_top(linked / "deeper" / "still") == linked
    above = next((p for p in [tmp_path, *tmp_path.parents] if os.path.lexists(p / ".git")), None)
    assert find_top(tmp_path / "plain") == above  # None but under a checkout


def test_a_repository_git_refuses_says_gits_reason(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / ".git").write_text("gitdir: /nonexistent/filegate-test\n")
    with pytest.raises(GitUnreadable) as raised:
        open_repo("git", broken)
    said = str(raised.value)
    assert said.startswith("not a git repository") and "fatal" not in said, said
    assert "\n" not in said and len(said) <= 200


def stand_in_git(tmp_path: Path, body: str) -> str:
    """A stand-in for git (a script; not git): what filegate does when git misbehaves."""
    script = tmp_path / "fake-git"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return str(script)


def test_git_failing_without_a_word_is_said_by_its_status(tmp_path: Path) -> None:
    with pytest.raises(GitUnreadable, match=r"^git exited with status 3$"):
        open_repo(stand_in_git(tmp_path, "exit 3"), tmp_path)
    long = stand_in_git(tmp_path, "printf 'fatal: %0300d\\nsecond line\\n' 0 >&2; exit 1")
    with pytest.raises(GitUnreadable) as raised:
        open_repo(long, tmp_path)
    assert str(raised.value) == "0" * 200  # the first line, without "fatal: ", cut at 200


def test_git_that_does_not_answer_or_cannot_start_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(githead, "GIT_TIMEOUT_S", 1.0)
    with pytest.raises(GitUnreadable, match=r"^git did not answer within 1 s$"):
        open_repo(stand_in_git(tmp_path, "sleep 30"), tmp_path)
    with pytest.raises(GitUnreadable, match=r"^git could not be started \(No such file or directory\)$"):
        open_repo(str(tmp_path / "no-git-here"), tmp_path)


READING = [
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.sshCommand=false",
    "core.askPass=",
    "core.pager=cat",
    "core.alternateRefsCommand=",
    "credential.helper=",
    "protocol.allow=never",
    "uploadpack.packObjectsHook=",
    "diff.external=",
    "gpg.program=false",
    "core.untrackedCache=false",
    "fetch.recurseSubmodules=false",
]


def test_git_runs_with_the_reading_settings_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What git is started with: `--no-pager` and every command-running key off on its command
    line, an environment of its own (nothing of the caller's but PATH and HOME), no stdin."""
    seen = tmp_path / "seen"
    script = stand_in_git(
        tmp_path, f'printf "%s\\n" "$@" > {seen}; env > {seen}.env; cat > {seen}.in; exit 1'
    )
    monkeypatch.setenv("GIT_DIR", "/elsewhere")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor=evil'")
    for windows_only in ("SYSTEMROOT", "USERPROFILE", "TEMP", "TMP"):  # passed on by git for Windows only
        monkeypatch.setenv(windows_only, "C:\\x")
    monkeypatch.delenv("HOME")
    monkeypatch.delenv("PATH")  # the shell's own default then
    with pytest.raises(GitUnreadable):
        open_repo(script, tmp_path)
    settings = [arg for setting in READING for arg in ("-c", setting)]
    assert seen.read_text().splitlines() == ["--no-pager", *settings, "rev-parse", "--show-toplevel"]
    env = dict(line.split("=", 1) for line in (tmp_path / "seen.env").read_text().splitlines() if "=" in line)
    for added_by_sh in ("PWD", "SHLVL", "_", "OLDPWD"):
        env.pop(added_by_sh, None)
    assert env == {
        "PATH": os.defpath,
        "HOME": "/nonexistent",
        "LC_ALL": "C",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ASKPASS": "false",
        "SSH_ASKPASS": "false",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_NO_REPLACE_OBJECTS": "1",
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_NO_LAZY_FETCH": "1",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_ALLOW_PROTOCOL": "none",
    }
    assert (tmp_path / "seen.in").read_text() == ""  # stdin: nothing, not the caller's


def test_the_callers_home_is_git_s_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = tmp_path / "seen.env"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(GitUnreadable):
        open_repo(stand_in_git(tmp_path, f"env > {seen}; exit 1"), tmp_path)
    assert f"HOME={tmp_path / 'home'}" in seen.read_text().splitlines()


def test_git_never_reads_the_servers_own_stdin(tmp_path: Path) -> None:
    """Over stdio, filegate's stdin is the client's JSON-RPC stream: git must not take from it."""
    seen = tmp_path / "seen.in"
    read, write = os.pipe()
    os.write(write, b"JSON-RPC bytes\n")
    os.close(write)
    saved = os.dup(0)
    os.dup2(read, 0)
    try:
        with pytest.raises(GitUnreadable):
            open_repo(stand_in_git(tmp_path, f"cat > {seen}; exit 1"), tmp_path)
        left = os.read(0, 100)
    finally:
        os.dup2(saved, 0)
        os.close(saved)
        os.close(read)
    assert seen.read_bytes() == b"" and left == b"JSON-RPC bytes\n"


def test_gits_complaint_in_any_bytes_is_said(tmp_path: Path) -> None:
    script = stand_in_git(tmp_path, "printf 'fatal: caf\\351 refused\\nnext\\n' >&2; exit 128")
    with pytest.raises(GitUnreadable, match="^caf\ufffd refused$"):
        open_repo(script, tmp_path)


@pytest.mark.parametrize("name", ["ends in a space ", "endsX"])
def test_a_top_folder_s_name_is_kept_whole(tmp_path: Path, name: str) -> None:
    top = tmp_path / name
    top.mkdir()
    git(top, "init", "-q")
    assert open_repo("git", top).top == Path(os.path.realpath(top))


def test_a_tree_git_cannot_list_is_said(tmp_path: Path) -> None:
    """A stand-in git that opens the repository but refuses to list its tree."""
    script = stand_in_git(
        tmp_path,
        'case "$*" in\n'
        f"  *--show-toplevel*) echo {tmp_path} ;;\n"
        "  *--verify*) echo 0123456789abcdef0123456789abcdef01234567 ;;\n"
        "  *ls-tree*) echo 'fatal: not a tree object' >&2; exit 128 ;;\n"
        "esac",
    )
    repo = open_repo(script, tmp_path)
    with pytest.raises(GitUnreadable, match="^not a tree object$"):
        head_files(script, repo, [tmp_path / "a.txt"])


OID = "0123456789abcdef0123456789abcdef01234567"


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ("echo 'fatal: bad object' >&2; exit 128", "^bad object$"),  # refused
        (f"printf '{'f' * 40} blob 4\\nabc\\n\\n'", "^git answered out of order$"),  # another object
        (f"printf '{OID} tree 4\\nabc\\n\\n'", "^git answered out of order$"),  # not a blob
        (f"printf '{OID} blob 4 more\\nabc\\n\\n'", "^git answered out of order$"),  # no header of three
    ],
)
def test_a_blob_git_will_not_give_as_asked_is_said(tmp_path: Path, answer: str, said: str) -> None:
    """A stand-in git that lists a blob in HEAD, then refuses it or answers with another."""
    script = stand_in_git(
        tmp_path,
        'case "$*" in\n'
        f"  *--show-toplevel*) echo {tmp_path} ;;\n"
        f"  *--verify*) echo {'e' * 40} ;;\n"
        f"  *ls-tree*) printf '100644 blob {OID}       4\\ta.txt\\0' ;;\n"
        f"  *cat-file*) cat > /dev/null; {answer} ;;\n"
        "esac",
    )
    with pytest.raises(GitUnreadable, match=said):
        head_files(script, open_repo(script, tmp_path), [tmp_path / "a.txt"])


def test_a_blob_missing_from_the_repository_is_said(repo: Path) -> None:
    (repo / "a.txt").write_text("one\n")
    commit(repo)
    oid = subprocess.run(["git", "rev-parse", "HEAD:a.txt"], cwd=repo, capture_output=True, check=True)
    name = oid.stdout.decode().strip()
    (repo / ".git" / "objects" / name[:2] / name[2:]).unlink()
    with pytest.raises(GitUnreadable, match="^git answered out of order$"):
        files(repo, "a.txt")
