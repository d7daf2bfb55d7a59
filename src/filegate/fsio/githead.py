"""Files as git's ``HEAD`` holds them (SPEC §10 Changes ``against: "HEAD"``): the one place
filegate reads git.

A workspace may be a hostile clone, so git runs as a reader only: plumbing (``rev-parse``,
``ls-tree``, ``cat-file --batch`` by object id) that runs no hook, no filter, no
``core.fsmonitor`` and no other command a config names; the system and global config left out,
every command-naming key that could matter set off on the command line, no network
(``protocol.allow=never``, no lazy fetch), no pager, no prompt, no lock taken, no replace refs,
literal pathspecs, an environment built from scratch (no inherited ``GIT_DIR`` and friends),
stdin closed but for the object ids, each run bounded in time. Nothing is ever checked out.
Blobs larger than :data:`BLOB_MAX_BYTES` are not read (their size is said).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

# Each git run stops after this long (a hostile include of a FIFO, a huge pack): the answer
# then says git could not be read.
GIT_TIMEOUT_S = 10.0
# A HEAD blob larger than this is not read: its size is said instead (the writes' own bound on
# what an edit holds is 128 MiB; a review's diff is cut far below that anyway).
BLOB_MAX_BYTES = 16 << 20
# ... and all of one call's blobs together at most this much.
BLOBS_MAX_BYTES = 64 << 20
# Paths named on one ls-tree command line, at most (an argument list stays far below ARG_MAX).
PATHS_PER_RUN = 500

# Every key that makes one of the commands below run something, switched off; none of these
# commands would read most of them, which is the point of choosing them, and this is the
# second line of defence. (A repository's own config cannot be skipped; these win over it.)
_OFF = (
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
)


class GitUnreadable(Exception):
    """git could not be read here (not installed, refused, timed out): the sentence says why."""


@dataclass(frozen=True, slots=True)
class HeadFile:
    """One path as ``HEAD`` holds it. ``data`` None with ``size`` set: larger than the bound;
    ``kind`` "absent" (not in HEAD), "blob", "link" (a symlink), "other" (a folder, a submodule)."""

    kind: str
    size: int = 0
    data: bytes | None = None


@dataclass(frozen=True, slots=True)
class Repo:
    top: Path  # the work tree's top folder (real path)
    head: str  # HEAD's commit id; "" when HEAD has no commit yet


def git_path() -> str | None:
    return shutil.which("git")


def _env() -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": os.environ.get("HOME", "/nonexistent"),
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
    if os.name == "nt":  # pragma: no cover - git for Windows needs these to start
        for key in ("SYSTEMROOT", "USERPROFILE", "TEMP", "TMP"):
            if key in os.environ:
                env[key] = os.environ[key]
    return env


def _run(
    git: str, cwd: Path, args: Sequence[str], stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    command = [git, "--no-pager"]
    for setting in _OFF:
        command += ["-c", setting]
    command += list(args)
    try:
        return subprocess.run(
            command,
            cwd=cwd,
            env=_env(),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitUnreadable(f"git did not answer within {GIT_TIMEOUT_S:.0f} s") from None
    except OSError as exc:
        raise GitUnreadable(f"git could not be started ({exc.strerror})") from None


def _why(done: subprocess.CompletedProcess[bytes]) -> str:
    """git's own complaint, first line, shortened (it names paths: the caller escapes it)."""
    first = done.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
    text = first[0].removeprefix("fatal: ") if first else f"git exited with status {done.returncode}"
    return text[:200]


def find_top(folder: Path) -> Path | None:
    """The nearest folder at or above ``folder`` holding a ``.git`` (a folder, or a file as in
    a linked worktree or a submodule); None when there is none. Only looked at, never opened."""
    here = folder
    while True:
        if os.path.lexists(here / ".git"):
            return here
        if here.parent == here:
            return None
        here = here.parent


def open_repo(git: str, top: Path) -> Repo:
    """The repository whose work tree starts at ``top``: its HEAD commit (GitUnreadable when
    git refuses it, e.g. a folder another user owns)."""
    done = _run(git, top, ["rev-parse", "--show-toplevel"])
    if done.returncode != 0:
        raise GitUnreadable(_why(done))
    shown = os.fsdecode(done.stdout.rstrip(b"\n"))
    real = Path(os.path.realpath(shown))
    head = _run(git, top, ["rev-parse", "-q", "--verify", "HEAD^{commit}"])
    commit = head.stdout.decode("ascii", "replace").strip() if head.returncode == 0 else ""
    return Repo(real, commit)


def head_files(git: str, repo: Repo, paths: Iterable[Path]) -> dict[Path, HeadFile]:
    """Each of ``paths`` (real paths under ``repo.top``) as HEAD holds it."""
    wanted = {p: os.path.relpath(p, repo.top).replace(os.sep, "/") for p in paths}
    found: dict[Path, HeadFile] = dict.fromkeys(wanted, HeadFile("absent"))
    if not repo.head:
        return found
    by_name = {name: p for p, name in wanted.items()}
    entries: dict[str, tuple[str, str, int]] = {}  # name -> (mode, oid, size)
    names = list(by_name)
    for at in range(0, len(names), PATHS_PER_RUN):
        chunk = names[at : at + PATHS_PER_RUN]
        done = _run(git, repo.top, ["ls-tree", "-z", "-l", "--full-tree", repo.head, "--", *chunk])
        if done.returncode != 0:
            raise GitUnreadable(_why(done))
        entries.update(_ls_tree(done.stdout))
    blobs: list[tuple[Path, str, int]] = []
    total = 0
    for name, (mode, oid, size) in entries.items():
        path = by_name.get(name)
        if path is None:
            continue
        if mode == "120000":
            found[path] = HeadFile("link", size)
        elif not mode.startswith("100"):
            found[path] = HeadFile("other")
        elif size > BLOB_MAX_BYTES or total + size > BLOBS_MAX_BYTES:
            found[path] = HeadFile("blob", size)  # not read: too large
        else:
            total += size
            blobs.append((path, oid, size))
    for (path, _, size), data in zip(
        blobs, _contents(git, repo.top, [oid for _, oid, _ in blobs]), strict=True
    ):
        found[path] = HeadFile("blob", size, data)
    return found


def _ls_tree(out: bytes) -> dict[str, tuple[str, str, int]]:
    """``ls-tree -z -l`` records: "<mode> <type> <oid> <size>\\t<name>\\0"."""
    entries = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, _kind, oid, size = meta.split(None, 3)
        entries[os.fsdecode(name)] = (
            mode.decode(),
            oid.decode(),
            int(size) if size.strip().isdigit() else 0,
        )
    return entries


def _contents(git: str, top: Path, oids: list[str]) -> list[bytes]:
    """The blobs' bytes, by object id (``cat-file --batch``: no filter, no textconv)."""
    if not oids:
        return []
    done = _run(git, top, ["cat-file", "--batch"], stdin="".join(f"{o}\n" for o in oids).encode())
    if done.returncode != 0:
        raise GitUnreadable(_why(done))
    out, at, found = done.stdout, 0, []
    for oid in oids:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        if len(header) != 3 or header[0].decode() != oid or header[1] != b"blob":
            raise GitUnreadable("git answered out of order")
        size = int(header[2])
        found.append(out[end + 1 : end + 1 + size])
        at = end + 1 + size + 1
    return found
