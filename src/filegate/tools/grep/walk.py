"""Which ignore files rg may read for a Grep (SPEC §4 Grep; issue 18 item 1).

A cloned repository chooses its ignore files, and rg opens each by name, following symlinks: a
`.gitignore` linked to /dev/zero ran rg out of memory, one linked to `/proc/self/environ`, to a
secret or to a file outside the workspace handed its lines to rg's glob parser (and to its error
messages). So:

- `.ignore`/`.rgignore` and the user's global excludes are never honoured;
- rg reads the `.gitignore` files of the searched tree itself only after a walk of that tree has
  seen every one of them to be a regular file (a walk costs a directory listing per directory;
  rg lists them too). If one is not, or the walk runs out of time, rg reads none and gets the
  regular ones from us instead;
- the `.gitignore` files of the searched directory's parents inside the workspace and the
  repository's `.git/info/exclude` are read here (no symlink followed, regular, bounded) and
  handed to rg as one rules file (`--ignore-file`, lower precedence than the tree's own).

Rules read here are rewritten to be relative to the searched directory, where rg applies an
``--ignore-file``. A parent's anchored rule that does not lead into the searched directory
(`*/build`, say) is dropped: it cannot be expressed relative to it.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from filegate.fsio import platform
from filegate.tools.search.ignores import IGNORE_NAME, MAX_RULES_BYTES, VCS_DIRS

# The walk that vets the tree's ignore files gives up (and rg reads none itself) past these.
WALK_BUDGET_S = 2.0
WALK_MAX_ENTRIES = 3_000_000


@dataclass(frozen=True)
class Secrets:
    """The secret rule of the walk: ``is_sensitive`` of a real path under ``top``; ``key``
    tells one set of patterns from another in remembered walks; ``patterns`` (gitignore
    syntax) let most names be cleared without a check of their whole path."""

    top: str
    is_sensitive: Callable[[str], bool]
    key: int
    patterns: tuple[str, ...] = ()
    # Client rules (SPEC §8.5): whether one could hide a file directly in a folder (a real
    # path); where one could, every file there is judged by its whole path.
    client_may_hide: Callable[[str], bool] | None = None

    @functools.cached_property
    def _tails(self) -> re.Pattern[str] | None:
        """The last parts of the patterns that hold a '/' (`.git/config` → `config`)."""
        tails = []
        for raw in self.patterns:
            p = raw.strip()
            if not p or p.startswith(("#", "!")):
                continue
            body = p.strip("/")
            tail = body.rsplit("/", 1)[1] if "/" in body else ""
            # A tail of only '*' (`.ssh/*`) names every entry of its directory, and those
            # directories are told by dir_may_hold: as a tail it would clear no name at all.
            if tail and tail.strip("*"):
                tails.append(fnmatch.translate(tail.lower()))
        return re.compile("|".join(tails)) if tails else None

    def dir_may_hold(self, base: str) -> bool:
        """Whether a pattern could match any file in the directory ``base`` (ending in '/') by
        its directory part alone: the directory itself is sensitive, or a `dir/` rule."""
        client = self.client_may_hide
        return (client is not None and client(base[:-1])) or self.is_sensitive(base + "\x01")

    def may_be(self, name: str) -> bool:
        """False only for a name no pattern can match in a directory where ``dir_may_hold``
        is False: one whose own rule does not match it, nor the last part of a path rule."""
        if self.is_sensitive(name):
            return True
        tails = self._tails
        if tails is None:
            return False
        folded = name if name.isascii() else unicodedata.normalize("NFC", name)
        return tails.match(folded.lower()) is not None


@dataclass
class TreeIgnores:
    """What the walk saw: the directories (relative, '' = the top) with a regular `.gitignore`,
    and whether any `.gitignore` was something else (or the walk did not finish)."""

    regular: list[str] = field(default_factory=list)
    unsafe: int = 0
    complete: bool = True
    sensitive: list[str] = field(default_factory=list)  # regular files that may hold secrets


@dataclass(frozen=True, slots=True)
class _Listed:
    """One directory as a walk last listed it."""

    ctime_ns: int  # changes with every entry added, removed or renamed (and cannot be set back)
    ino: int
    regular: bool  # holds a regular `.gitignore`
    unsafe: int  # holds a `.gitignore` that is a symlink, not a regular file or over 1 MiB
    subdirs: tuple[str, ...]
    sensitive: tuple[str, ...]  # the paths of its regular files that may hold secrets


# Walks remembered per searched tree (by device and inode of its top): a directory whose ctime
# and inode are unchanged has the same entries, so a repeated search stats each directory
# instead of listing it (kernel tree: ~4,800 stats instead of ~83,000 entries).
_REMEMBERED: dict[tuple[int, int, int], dict[str, _Listed]] = {}
REMEMBER_TREES = 8
REMEMBER_MAX_DIRS = 200_000
# A directory changed this recently may change again within the same timestamp tick: listed anew.
RACY_NS = 2_000_000_000


def walk_tree(
    top_fd: int, secrets: Secrets | None = None, budget_s: float = WALK_BUDGET_S, top_path: str | None = None
) -> TreeIgnores:
    """List every directory under the one open as ``top_fd`` (by paths relative to it, no
    symlink followed, VCS folders skipped), vet each `.gitignore` in it and find the files that
    may hold secrets. Iterative: any depth. Directories unchanged since the last walk of the
    same tree (and the same secret patterns) are taken from it.

    Where the platform has no ``dir_fd`` (Windows), ``top_path`` (the real path ``top_fd`` was
    opened from) is walked by path instead, each directory verified as :class:`_ByPath` says."""
    found = TreeIgnores()
    try:
        top = os.fstat(top_fd)
    except OSError:
        return found
    by_path = _ByPath(top_path, top) if top_path is not None else None
    key = (top.st_dev, top.st_ino, secrets.key if secrets else 0)
    before = _REMEMBERED.get(key, {})
    now: dict[str, _Listed] = {}
    deadline = time.monotonic() + budget_s
    fresh_before = time.time_ns() - RACY_NS  # changed after this: maybe again in the same tick
    seen = 0
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            st = os.lstat(rel or ".", dir_fd=top_fd) if by_path is None else by_path.lstat(rel)
        except OSError:
            continue
        except _Swapped:  # not the directory the walk was given: nothing of it is trusted
            found.complete = False
            break
        listed = before.get(rel)
        if (
            listed is None
            or (listed.ctime_ns, listed.ino) != (st.st_ctime_ns, st.st_ino)
            or st.st_ctime_ns >= fresh_before
            or (listed.regular and not _still_sane(top_fd, rel, by_path))
        ):
            try:
                listed = _list_dir(top_fd, rel, st, secrets, by_path)
            except _Swapped:
                found.complete = False
                break
            if listed is None:
                continue  # unreadable for rg as well
            seen += len(listed.subdirs) + 1
        now[rel] = listed
        if listed.regular:
            found.regular.append(rel)
        found.unsafe += listed.unsafe
        found.sensitive.extend(listed.sensitive)
        stack.extend(listed.subdirs)
        if seen > WALK_MAX_ENTRIES or time.monotonic() > deadline:
            found.complete = False
            break
    if found.complete and len(now) <= REMEMBER_MAX_DIRS:
        _REMEMBERED.pop(key, None)
        _REMEMBERED[key] = now
        while len(_REMEMBERED) > REMEMBER_TREES:
            _REMEMBERED.pop(next(iter(_REMEMBERED)))
    found.regular.sort()  # outer rules first: a directory sorts before everything under it
    return found


def _still_sane(top_fd: int, rel: str, by_path: _ByPath | None) -> bool:
    """A remembered directory's regular `.gitignore` is still regular and of sane size: written
    in place (truncated to 4 GiB, say), it changes its own ctime, not its directory's."""
    name = f"{rel}/{IGNORE_NAME}" if rel else IGNORE_NAME
    try:
        st = os.lstat(name, dir_fd=top_fd) if by_path is None else os.lstat(by_path.path(name))
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_size <= MAX_RULES_BYTES


class _Swapped(Exception):
    """A directory of a walk by path is no longer the one it was: the walk stops, incomplete."""


@dataclass(frozen=True)
class _ByPath:
    """A walk by path where there is no ``dir_fd`` (Windows), verified the way
    :func:`~filegate.fsio.safeopen.open_then_verify` verifies an open: a directory is listed
    only if its path is its own real path (no symlink or junction on the way: ``realpath``
    resolves both) and is the very directory (its identity) before and after the listing; the
    top, the directory the search pinned. A directory that became a link is skipped (rg does
    not follow links either); one whose identity changed stops the walk (incomplete: rg then
    reads no ignore file itself). A swap undone again between the checks is not seen (the race
    window the README names for the no-``dir_fd`` read path)."""

    top: str
    pinned: os.stat_result

    def path(self, rel: str) -> str:
        return os.path.join(self.top, *rel.split("/")) if rel else self.top

    def lstat(self, rel: str) -> os.stat_result:
        st = os.lstat(self.path(rel))
        if not rel and not os.path.samestat(st, self.pinned):
            raise _Swapped
        return st

    def is_itself(self, rel: str, st: os.stat_result) -> bool:
        """The path still names the directory ``st`` was taken of, through no link."""
        path = self.path(rel)
        try:  # realpath fails (EINVAL) when a link is swapped for a directory while it resolves
            if os.path.normcase(os.path.realpath(path)) != os.path.normcase(path):
                return False
            now = os.lstat(path)
        except OSError:
            return False
        if not (stat.S_ISDIR(now.st_mode) and os.path.samestat(now, st)):
            raise _Swapped
        return True


def _list_dir(
    top_fd: int, rel: str, st: os.stat_result, secrets: Secrets | None, by_path: _ByPath | None = None
) -> _Listed | None:
    regular, unsafe = False, 0
    subdirs: list[str] = []
    sensitive: list[str] = []
    base = f"{secrets.top}/{rel}/" if secrets and rel else f"{secrets.top}/" if secrets else ""
    everything = secrets is not None and secrets.dir_may_hold(base)
    if by_path is not None:
        if not stat.S_ISDIR(st.st_mode) or not by_path.is_itself(rel, st):
            return None  # a link (or a junction) now: not entered
        listing: int | str = by_path.path(rel)
    else:
        try:
            listing = os.open(
                rel or ".",
                os.O_RDONLY | platform.DIRECTORY | platform.NOFOLLOW | platform.CLOEXEC,
                dir_fd=top_fd,
            )
        except OSError:
            return None
    try:
        with os.scandir(listing) as it:
            for entry in it:
                name = entry.name
                if name == IGNORE_NAME:
                    # A regular file too, rg reads whole: a sparse 4 GiB one is one endless line.
                    if (
                        entry.is_file(follow_symlinks=False)
                        and entry.stat(follow_symlinks=False).st_size <= MAX_RULES_BYTES
                    ):
                        regular = True
                    else:
                        unsafe = 1  # one `.gitignore` per directory
                elif name not in VCS_DIRS and entry.is_dir(follow_symlinks=False):
                    subdirs.append(f"{rel}/{name}" if rel else name)
                    continue
                if (
                    secrets
                    and (everything or secrets.may_be(name))
                    and secrets.is_sensitive(base + name)
                    and entry.is_file(follow_symlinks=False)
                ):
                    sensitive.append(f"{rel}/{name}" if rel else name)
    except OSError:
        return None
    finally:
        if isinstance(listing, int):
            os.close(listing)
    if by_path is not None and not by_path.is_itself(rel, st):
        return None  # became a link while listed: what it listed is not used
    return _Listed(st.st_ctime_ns, st.st_ino, regular, unsafe, tuple(subdirs), tuple(sensitive))
