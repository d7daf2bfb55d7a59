"""Glob: a sorted, bounded, confined walk matching `*`, `?`, `[..]`, `**` and `{a,b}`.

The patterns and the states the walk moves through them: :mod:`filegate.tools.search.glob_patterns`.
The walk is iterative (any depth of tree), checks the caller's cancellation and its time
budget at every directory, skips VCS folders and what `.gitignore` files ignore (see
:mod:`filegate.tools.search.ignores`), and shows every name through :func:`escape`.
"""

from __future__ import annotations

import bisect
import os
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from operator import length_hint
from pathlib import Path
from typing import Annotated

import anyio
from pydantic import BaseModel, ConfigDict, Field

from filegate.policy.escape import escape
from filegate.policy.workspace import Workspace
from filegate.tools.describe import load_description
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec
from filegate.tools.search.glob_patterns import (
    After,
    Compiled,
    Moves,
    State,
    States,
    compile_pattern,
)
from filegate.tools.search.glob_summary import WalkReport, fit
from filegate.tools.search.ignores import IGNORE_NAME, VCS_DIRS, IgnoreReader, Ignores

# Kimi's glob.py MAX_MATCHES; the walk stops one past it.
MAX_MATCHES = 1000
# A walk that has not finished by then returns what it found (a 200,000-entry tree takes ~1 s).
WALK_BUDGET_S = 20.0
# Entries of one directory matched between two looks at the cancellation flag and the clock.
CHUNK = 256

_VCS = frozenset(VCS_DIRS)


class GlobParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: Annotated[str, Field(description="Glob pattern to match files/directories.")]
    directory: Annotated[
        str | None,
        Field(description="Absolute path to the directory to search in (defaults to working directory)."),
    ] = None
    include_dirs: Annotated[bool, Field(description="Whether to include directories in results.")] = True
    include_ignored: Annotated[
        bool, Field(description="Also match paths ignored by .gitignore (VCS folders stay skipped).")
    ] = False
    head_limit: Annotated[
        int | None,
        Field(ge=0, description=f"Return at most this many matches (0: up to {MAX_MATCHES})."),
    ] = None
    offset: Annotated[int, Field(ge=0, description="Skip this many matches first (for the next page).")] = 0


Entry = tuple[str, bool, bool]  # name, is a real directory, is a symlink


@dataclass(slots=True)
class _Frame:
    """A directory being walked: its remaining entries and what applies in it."""

    entries: Iterator[Entry]  # over a list: length_hint says how many are left
    prefix: str  # the directory's path, ending in '/'
    rel: str  # the directory relative to the walk's root, '' or ending in '/'
    moves: Moves
    ignores: Ignores | None  # None: nothing is ignored in here


@dataclass
class _Walk:
    """The walk itself: a stack of directory frames, each entry moved through the patterns'
    states (:class:`States`), what matches emitted, what is ignored or sensitive counted."""

    root: Path
    patterns: list[Compiled]
    include_dirs: bool
    workspace: Workspace
    deadline: float
    cancelled: threading.Event
    reader: IgnoreReader | None  # None: include_ignored
    matches: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    hidden: int = 0  # files a client rule hides (counted, never named)
    rule_sources: set[str] = field(default_factory=set)  # client rule files that hid some (shown)
    unreadable: int = 0
    ignored: int = 0  # entries a pattern reached that .gitignore rules left out
    more: bool = False
    timed_out: bool = False
    skip: int = 0  # matches passed over before the first one kept (Glob's `offset`)
    cap: int = MAX_MATCHES  # matches kept at most
    passed: int = 0
    states: States = field(init=False)

    def __post_init__(self) -> None:
        self.states = States(self.patterns)

    def run(self) -> None:
        first = self.states.after(frozenset((p, 0) for p in range(len(self.patterns))))
        ignores = self.reader.above(self.root, self.workspace) if self.reader else None
        # A `directory` below a workspace folder is named by the caller, as a pattern's leading names are.
        named = self.root not in self.workspace.dirs
        top = self.open(str(self.root), "", first.live, ignores, named=named)
        stack = [top] if top else []
        while stack:
            child = self.step(stack[-1])
            if self.more:
                return
            if child is not None:
                stack.append(child)
            elif not length_hint(stack[-1].entries):
                stack.pop()
            if self.cancelled.is_set():
                return
            if time.monotonic() > self.deadline:
                self.timed_out = True
                return

    def step(self, frame: _Frame) -> _Frame | None:
        """The next entries of ``frame``, a chunk at a time (a huge directory is cancellable
        and bounded in time too): the frame of the first directory the walk goes into, or None
        when the chunk holds none."""
        known = self.states.known_after
        # The per-entry loop is the hot path (tens of thousands of entries): an entry no
        # pattern can reach costs a dict lookup and the name's regexes, nothing more.
        m = frame.moves
        on_file, on_dir, names, regexes = m.on_any, m.on_dir_or_any, m.names, m.regexes
        for name, plain_dir, is_link in islice(frame.entries, CHUNK):
            is_dir = plain_dir or (is_link and self._linked_dir(frame.prefix + name))
            reached = on_dir if is_dir else on_file
            hit = names.get(name)
            if hit is not None:
                reached = reached | hit
            for rx, target in regexes:
                if rx.fullmatch(name):
                    reached = reached | target
            if not reached:
                continue
            facts = known.get(reached) or self.states.after(reached)
            named = hit is not None and name in m.leading_names
            child = self.visit(frame, name, is_dir, is_link, facts, named)
            if self.more or child is not None:
                return child
        return None

    def visit(
        self, frame: _Frame, name: str, is_dir: bool, is_link: bool, facts: After, named: bool
    ) -> _Frame | None:
        """An entry some pattern reached (``named``: by one of its literal leading names): emit
        it, and the frame of its directory when the walk goes into it."""
        child_rel = frame.rel + name
        ignores = frame.ignores
        if not named:
            if is_dir and name in _VCS:
                return None
            if ignores is not None and ignores.ignored(child_rel, name, is_dir):
                self.ignored += 1
                return None
        elif ignores is not None and ignores.ignored(child_rel, name, is_dir):
            ignores = None  # the caller named an ignored directory: all of it is wanted
        path = frame.prefix + name
        if facts.ends_file or (is_dir and facts.ends_dir):
            self.emit(path, child_rel, is_dir, is_link)
            if self.more:
                return None
        if is_dir and facts.live:
            # Through a symlinked directory only by name, never by `**` (no cycles).
            below = facts.by_name if is_link else facts.live
            if below:
                return self.open(path, child_rel + "/", below, ignores, named=named)
        return None

    def open(
        self, directory: str, rel: str, live: frozenset[State], ignores: Ignores | None, named: bool
    ) -> _Frame | None:
        m = self.states.moves(live)
        prefix = directory if directory.endswith("/") else directory + "/"
        entries: list[Entry]
        try:
            if m.literal:
                found = [(n, *_kind(prefix + n)) for n in sorted(m.names)]
                entries = [(n, d, s) for n, d, s in found if d is not None]
            elif m.on_any or m.regexes:
                with os.scandir(directory) as it:
                    # d_type answers these without a stat per entry
                    entries = sorted((e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in it)
            else:
                # Only a name the patterns spell out can match a file here (`**/Kconfig` below
                # the top): the other files, most of a source tree, are dropped unsorted.
                keep = m.names
                with os.scandir(directory) as it:
                    entries = sorted(
                        (e.name, e.is_dir(follow_symlinks=False), e.is_symlink())
                        for e in it
                        if not e.is_file(follow_symlinks=False) or e.name in keep or e.name == IGNORE_NAME
                    )
        except OSError:
            self.unreadable += 1
            return None
        if ignores is not None and self.reader is not None:
            # A looked-up directory was not listed: the reader tries to open both files.
            has_ignore_file = None if m.literal else _listed(entries, IGNORE_NAME)
            git_dir = None if m.literal else _listed(entries, ".git", want_dir=True)
            ignores = self.reader.enter(prefix, rel, ignores, has_ignore_file, git_dir)
            if named and ignores is not None and ignores.ignores_everything_in(rel):
                ignores = None  # a named directory whose own .gitignore says `*` (a virtualenv)
        return _Frame(iter(entries), prefix, rel, m, ignores)

    def _linked_dir(self, path: str) -> bool:
        real = _realpath(path)
        return real is not None and os.path.isdir(real) and self.workspace.contains(real)

    def emit(self, path: str, rel: str, is_dir: bool, is_link: bool) -> None:
        if not self.include_dirs and (is_dir or not os.path.isfile(path)):
            return
        real = _realpath(path) if is_link else path
        if real is None:  # a link that stopped being one while it was resolved: leave it out
            return
        if not is_dir and self.workspace.secrets.is_sensitive(real):
            source = self.workspace.secrets.hidden_by(real)
            if source is None:
                self.skipped.append(path.rsplit("/", 1)[-1])
            else:  # counted, never named (SPEC §8.5)
                self.hidden += 1
                self.rule_sources.add(source)
            return
        if self.passed < self.skip:  # counted, never held: any offset costs no memory
            self.passed += 1
            return
        if len(self.matches) >= self.cap:
            self.more = True
            return
        self.matches.append(rel)


def _listed(entries: list[Entry], name: str, want_dir: bool = False) -> bool:
    """Whether a sorted listing holds ``name`` (as a real directory, if ``want_dir``)."""
    i = bisect.bisect_left(entries, (name,))
    if i == len(entries) or entries[i][0] != name:
        return False
    return entries[i][1] or not want_dir


def _realpath(path: str) -> str | None:
    """realpath, or None when a symlink on the way is swapped mid-resolution (readlink EINVAL)."""
    try:
        return os.path.realpath(path)
    except OSError:
        return None


def _kind(path: str) -> tuple[bool | None, bool]:
    """(is a real directory, is a symlink) of a path, or (None, False) when it does not exist."""
    try:
        st = os.lstat(path)
    except OSError:
        return None, False
    return stat.S_ISDIR(st.st_mode), stat.S_ISLNK(st.st_mode)


def _glob(params: GlobParams, workspace: Workspace, budget: int, cancelled: threading.Event) -> Outcome:
    _, root = workspace.resolve_search_dir(params.directory)
    patterns = compile_pattern(params.pattern)
    reader = None if params.include_ignored else IgnoreReader()
    cap = min(params.head_limit or MAX_MATCHES, MAX_MATCHES)
    walk = _Walk(root, patterns, params.include_dirs, workspace, time.monotonic() + WALK_BUDGET_S,
                 cancelled, reader, skip=params.offset, cap=cap)  # fmt: skip
    if walk.patterns:
        walk.run()
    report = WalkReport(
        found=len(walk.matches), more=walk.more, offset=params.offset, cap=cap,
        paged=params.head_limit is not None or params.offset > 0, passed=walk.passed,
        timed_out=walk.timed_out, unreadable=walk.unreadable, ignored=walk.ignored,
        skipped=walk.skipped, hidden=walk.hidden, rule_sources=sorted(walk.rule_sources),
        budget_s=WALK_BUDGET_S,
    )  # fmt: skip
    lines, msg = fit([escape(m) for m in walk.matches], report, params.pattern, budget)
    return Outcome(output="\n".join(lines), message=msg, skipped_sensitive=len(walk.skipped),
                   skipped_hidden=walk.hidden,
                   partial=walk.more or len(lines) < len(walk.matches))  # fmt: skip


async def glob(params: GlobParams, env: ToolEnv) -> Outcome:
    cancelled = threading.Event()
    try:
        return await anyio.to_thread.run_sync(
            _glob, params, env.workspace, env.text_budget, cancelled, abandon_on_cancel=True
        )
    finally:
        cancelled.set()  # a cancelled call's walk stops at its next directory


SPEC = ToolSpec(
    name="Glob",
    title="Find files by pattern",
    description=load_description("glob", MAX_MATCHES=MAX_MATCHES),
    params=GlobParams,
    handler=glob,
    read_only=True,
)
