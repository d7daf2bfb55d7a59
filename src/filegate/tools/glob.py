"""Glob: a sorted, bounded, confined walk matching `*`, `?`, `[..]`, `**` and `{a,b}`.

The walk is iterative (any depth of tree), checks the caller's cancellation and its time
budget at every directory, skips VCS folders and what `.gitignore` files ignore (see
:mod:`filegate.tools.ignores`), and shows every name through :func:`escape`.
"""

from __future__ import annotations

import bisect
import os
import re
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

from filegate.errors import PathError
from filegate.policy.escape import escape, unescape
from filegate.policy.workspace import Workspace, abbreviate
from filegate.tools.describe import load_description
from filegate.tools.glob_summary import WalkReport, fit
from filegate.tools.ignores import IGNORE_NAME, VCS_DIRS, IgnoreReader, Ignores
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec

# Kimi's glob.py MAX_MATCHES; the walk stops one past it.
MAX_MATCHES = 1000
# Brace expansion of one pattern may not produce more alternatives than this.
MAX_BRACE_ALTERNATIVES = 256
# A walk that has not finished by then returns what it found (a 200,000-entry tree takes ~1 s).
WALK_BUDGET_S = 20.0
# Entries of one directory matched between two looks at the cancellation flag and the clock.
CHUNK = 256

GLOBSTAR = object()
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


Segment = object  # GLOBSTAR, a literal str, or a compiled re.Pattern


@dataclass(frozen=True, slots=True)
class Compiled:
    """One brace alternative of a pattern."""

    segments: list[Segment]
    dirs_only: bool  # the alternative ended in `/`
    literal_prefix: int  # how many leading segments are plain names


def _pattern_error(message: str) -> PathError:
    return PathError(message, "Invalid pattern")


_SERVER_ESCAPE = re.compile(r"\\(?:\\|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})")
_GLOB_SPECIAL = frozenset("*?[]{}!|()@+\\,-^")


def _taken_back(pattern: str) -> str:
    """``pattern`` with each ``\\xNN``/``\\uNNNN``/``\\UNNNNNNNN`` the server writes turned back
    into its character (glob-escaped where the character means something to a glob); ``\\\\``
    stays glob's literal backslash."""

    def back(m: re.Match[str]) -> str:
        spelled = m.group()
        if spelled == "\\\\":
            return spelled
        ch = unescape(spelled)
        if ch == spelled or ch == "\0":
            return spelled
        return "\\" + ch if ch in _GLOB_SPECIAL else ch

    return _SERVER_ESCAPE.sub(back, pattern) if "\\" in pattern else pattern


def compile_pattern(pattern: str) -> list[Compiled]:
    """Brace-expand and split into per-directory segments; refuse empty, absolute and `..`."""
    shown = abbreviate(pattern)  # escaped there, once
    if not pattern:
        raise _pattern_error("Pattern cannot be empty.")
    if "\0" in pattern:
        raise _pattern_error(f"Pattern `{shown}` contains a NUL byte, which no file name can hold.")
    try:
        os.fsencode(pattern)
    except UnicodeEncodeError:
        raise _pattern_error(
            f"Pattern `{shown}` contains a lone UTF-16 surrogate, which no file name can hold."
        ) from None
    if pattern.startswith("/") or pattern.startswith("~"):
        raise _pattern_error(
            f"Pattern `{shown}` is absolute. Give a pattern relative to `directory`, and put "
            "the absolute part in `directory`."
        )
    # Imported on the first Glob, not at start-up: no import a start does not need.
    import bracex
    from wcmatch import fnmatch as wfnmatch

    # A name shown escaped (`caf\xe9.py`, SPEC §2.9) names the same file when passed back:
    # the escapes the server writes are taken back, and only those (`\\` is already glob's
    # literal backslash, so `cfg\\xff.py` matches the name that holds one).
    spellings = (_taken_back(pattern),)
    try:
        alternatives = [
            a for p in spellings for a in bracex.expand(p, keep_escapes=True, limit=MAX_BRACE_ALTERNATIVES)
        ]
    except Exception:
        raise _pattern_error(
            f"Pattern `{shown}` expands to too many alternatives (more than "
            f"{MAX_BRACE_ALTERNATIVES}). Use a more specific pattern."
        ) from None
    compiled: list[Compiled] = []
    for alt in alternatives:
        segs: list[Segment] = []
        for part in alt.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                raise _pattern_error(
                    f"Pattern `{shown}` leaves the search directory (`..`). Set `directory` "
                    "to the directory you want to search instead."
                )
            if part == "**":
                if not segs or segs[-1] is not GLOBSTAR:
                    segs.append(GLOBSTAR)
            elif not re.search(r"[*?\[]", part) and "\\" not in part:
                segs.append(part)
            else:
                regex = wfnmatch.translate(part, flags=wfnmatch.DOTMATCH)[0][0]
                segs.append(re.compile(regex))
        if segs:
            prefix = 0
            while prefix < len(segs) and isinstance(segs[prefix], str):
                prefix += 1
            compiled.append(Compiled(segs, alt.endswith("/"), prefix))
    return compiled


State = tuple[int, int]  # (pattern index, segment index)


@dataclass(frozen=True, slots=True)
class _Moves:
    """Where a set of live states goes on one directory entry, worked out once per set."""

    on_dir: frozenset[State]  # `**` stays where it is, on a directory
    on_any: frozenset[State]  # a final `**` matches any entry
    on_dir_or_any: frozenset[State]  # where a directory goes whatever its name
    names: dict[str, frozenset[State]]  # literal segments
    leading_names: frozenset[str]  # those among a pattern's literal leading names
    regexes: tuple[tuple[re.Pattern[str], frozenset[State]], ...]

    @property
    def literal(self) -> bool:
        """Only literal names can match: look them up instead of listing the directory."""
        return not (self.on_dir or self.on_any or self.regexes)


@dataclass(frozen=True, slots=True)
class _After:
    """Facts about a set of states reached on an entry."""

    ends_dir: bool  # some pattern is complete: the entry matches if it is a directory
    ends_file: bool  # some pattern not ending in `/` is complete: it matches as a file too
    live: frozenset[State]  # states that can still match below the entry
    by_name: frozenset[State]  # live states that are not at a `**` (the way into a symlink)


Entry = tuple[str, bool, bool]  # name, is a real directory, is a symlink


@dataclass(slots=True)
class _Frame:
    """A directory being walked: its remaining entries and what applies in it."""

    entries: Iterator[Entry]  # over a list: length_hint says how many are left
    prefix: str  # the directory's path, ending in '/'
    rel: str  # the directory relative to the walk's root, '' or ending in '/'
    moves: _Moves
    ignores: Ignores | None  # None: nothing is ignored in here


@dataclass
class _Walk:
    root: Path
    patterns: list[Compiled]
    include_dirs: bool
    workspace: Workspace
    deadline: float
    cancelled: threading.Event
    reader: IgnoreReader | None  # None: include_ignored
    matches: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    rule_sources: set[str] = field(default_factory=set)  # client rule files that hid some (shown)
    unreadable: int = 0
    ignored: int = 0  # entries a pattern reached that .gitignore rules left out
    more: bool = False
    timed_out: bool = False
    skip: int = 0  # matches passed over before the first one kept (Glob's `offset`)
    cap: int = MAX_MATCHES  # matches kept at most
    passed: int = 0
    # The walk meets the same few state sets over and over (tens of thousands of entries,
    # a handful of sets): their moves and closures are computed once.
    _moves: dict[frozenset[State], _Moves] = field(default_factory=dict)
    _after: dict[frozenset[State], _After] = field(default_factory=dict)

    def closure(self, states: set[State]) -> set[State]:
        out = set(states)
        todo = list(states)
        while todo:
            p, i = todo.pop()
            segs = self.patterns[p].segments
            # `**` may match no directory at all, unless it is the last segment (then it
            # matches everything below, but not the directory it stands in).
            if i < len(segs) - 1 and segs[i] is GLOBSTAR and (p, i + 1) not in out:
                out.add((p, i + 1))
                todo.append((p, i + 1))
        return out

    def moves(self, live: frozenset[State]) -> _Moves:
        hit = self._moves.get(live)
        if hit is not None:
            return hit
        on_dir: set[State] = set()
        on_any: set[State] = set()
        names: dict[str, set[State]] = {}
        regexes: list[tuple[re.Pattern[str], frozenset[State]]] = []
        for p, i in live:
            segs = self.patterns[p].segments
            seg = segs[i]
            if seg is GLOBSTAR:
                on_dir.add((p, i))
                if i == len(segs) - 1:
                    on_any.add((p, i + 1))
            elif isinstance(seg, str):
                names.setdefault(seg, set()).add((p, i + 1))
            else:
                regexes.append((seg, frozenset({(p, i + 1)})))  # type: ignore[arg-type]
        # A literal segment at index i < literal_prefix is reached only from the root through
        # literal names: the entry it names is one the caller spelled out.
        leading = frozenset(
            k for k, v in names.items() if any(i <= self.patterns[p].literal_prefix for p, i in v)
        )
        made = _Moves(frozenset(on_dir), frozenset(on_any), frozenset(on_dir | on_any),
                      {k: frozenset(v) for k, v in names.items()}, leading, tuple(regexes))  # fmt: skip
        self._moves[live] = made
        return made

    def after(self, reached: frozenset[State]) -> _After:
        """Facts about the closure of ``reached``, cached."""
        hit = self._after.get(reached)
        if hit is not None:
            return hit
        pats = self.patterns
        full = self.closure(set(reached))
        ended = [p for p, i in full if i == len(pats[p].segments)]
        live = frozenset((p, i) for p, i in full if i < len(pats[p].segments))
        made = _After(
            ends_dir=bool(ended),
            ends_file=any(not pats[p].dirs_only for p in ended),
            live=live,
            by_name=frozenset((p, i) for p, i in live if pats[p].segments[i] is not GLOBSTAR),
        )
        self._after[reached] = made
        return made

    def run(self) -> None:
        first = self.after(frozenset((p, 0) for p in range(len(self.patterns))))
        ignores = self.reader.above(self.root, self.workspace) if self.reader else None
        # A `directory` below a workspace folder is named by the caller, as a pattern's leading names are.
        named = self.root not in self.workspace.dirs
        top = self.open(str(self.root), "", first.live, ignores, named=named)
        stack = [top] if top else []
        known = self._after
        while stack:
            frame = stack[-1]
            # The per-entry loop is the hot path (tens of thousands of entries): an entry no
            # pattern can reach costs a dict lookup and the name's regexes, nothing more.
            m = frame.moves
            on_file, on_dir, names, regexes = m.on_any, m.on_dir_or_any, m.names, m.regexes
            # A chunk at a time: a huge directory is cancellable and bounded in time too.
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
                facts = known.get(reached) or self.after(reached)
                named = hit is not None and name in m.leading_names
                child = self.visit(frame, name, is_dir, is_link, facts, named)
                if self.more:
                    return
                if child is not None:
                    stack.append(child)
                    break
            else:
                if not length_hint(frame.entries):
                    stack.pop()
            if self.cancelled.is_set():
                return
            if time.monotonic() > self.deadline:
                self.timed_out = True
                return

    def visit(
        self, frame: _Frame, name: str, is_dir: bool, is_link: bool, facts: _After, named: bool
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
        m = self.moves(live)
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
            self.skipped.append(path.rsplit("/", 1)[-1])
            source = self.workspace.secrets.hidden_by(real)
            if source is not None:
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
        skipped=walk.skipped, rule_sources=sorted(walk.rule_sources), budget_s=WALK_BUDGET_S,
    )  # fmt: skip
    lines, msg = fit([escape(m) for m in walk.matches], report, params.pattern, budget)
    return Outcome(output="\n".join(lines), message=msg, skipped_sensitive=len(walk.skipped),
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
