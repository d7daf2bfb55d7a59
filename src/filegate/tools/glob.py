"""Glob: a sorted, bounded, confined walk matching `*`, `?`, `[..]`, `**` and `{a,b}`."""

from __future__ import annotations

import os
import re
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import anyio
from pydantic import BaseModel, ConfigDict, Field

from filegate.policy.secrets import skipped_secrets_warning
from filegate.policy.workspace import PathError, Workspace
from filegate.tools.describe import load_description
from filegate.tools.outcome import Outcome, ToolEnv

# Kimi's glob.py MAX_MATCHES; the walk stops one past it.
MAX_MATCHES = 1000
# Brace expansion of one pattern may not produce more alternatives than this.
MAX_BRACE_ALTERNATIVES = 256
# A walk that has not finished by then returns what it found (a 200,000-entry tree takes ~1 s).
WALK_BUDGET_S = 20.0
# Kimi's list_directory: entries shown at the top level, and under each top-level directory.
LIST_TOP, LIST_CHILDREN = 30, 10

GLOBSTAR = object()


class GlobParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    pattern: Annotated[str, Field(description="Glob pattern to match files/directories.")]
    directory: Annotated[
        str | None,
        Field(description="Absolute path to the directory to search in (defaults to working directory)."),
    ] = None
    include_dirs: Annotated[bool, Field(description="Whether to include directories in results.")] = True


class GlobFacts(BaseModel):
    """structuredContent of a successful Glob."""

    matches: int
    truncated: bool
    skipped_sensitive: int


Segment = object  # GLOBSTAR, a literal str, or a compiled re.Pattern


def compile_pattern(pattern: str) -> list[list[Segment]]:
    """Brace-expand and split into per-directory segments; refuse absolute and `..`."""
    if "\0" in pattern:
        raise PathError(
            f"Pattern `{pattern!r}` contains a NUL byte, which no file name can hold.", "Invalid pattern"
        )
    try:
        os.fsencode(pattern)
    except UnicodeEncodeError:
        shown = pattern.encode("utf-8", "backslashreplace").decode()
        raise PathError(
            f"Pattern `{shown}` contains a lone UTF-16 surrogate, which no file name can hold.",
            "Invalid pattern",
        ) from None
    if pattern.startswith("/") or pattern.startswith("~"):
        raise PathError(
            f"Pattern `{pattern}` is absolute. Give a pattern relative to `directory`, and put "
            "the absolute part in `directory`.",
            "Invalid pattern",
        )
    # Imported on the first Glob, not at start-up (wcmatch takes ~15 ms to import).
    import bracex
    from wcmatch import fnmatch as wfnmatch

    try:
        alternatives = bracex.expand(pattern, limit=MAX_BRACE_ALTERNATIVES)
    except Exception:
        raise PathError(
            f"Pattern `{pattern}` expands to too many alternatives (more than "
            f"{MAX_BRACE_ALTERNATIVES}). Use a more specific pattern.",
            "Invalid pattern",
        ) from None
    compiled: list[list[Segment]] = []
    for alt in alternatives:
        segs: list[Segment] = []
        for part in alt.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                raise PathError(
                    f"Pattern `{pattern}` leaves the search directory (`..`). Set `directory` "
                    "to the directory you want to search instead.",
                    "Invalid pattern",
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
            compiled.append(segs)
    return compiled


def starts_with_globstar(pattern: str) -> bool:
    p = pattern
    while p.startswith("./"):
        p = p[2:]
    return p.startswith("**")


State = tuple[int, int]  # (pattern index, segment index)


@dataclass(frozen=True, slots=True)
class _Moves:
    """Where a set of live states goes on one directory entry, worked out once per set."""

    on_dir: frozenset[State]  # `**` stays where it is, on a directory
    on_any: frozenset[State]  # a final `**` matches any entry
    names: dict[str, frozenset[State]]  # literal segments
    regexes: tuple[tuple[re.Pattern[str], State], ...]

    @property
    def literal(self) -> bool:
        """Only literal names can match: look them up instead of listing the directory."""
        return not (self.on_dir or self.on_any or self.regexes)


@dataclass(frozen=True, slots=True)
class _After:
    """Facts about a set of states reached on an entry."""

    ended: bool  # some pattern is complete: the entry matches
    live: frozenset[State]  # states that can still match below the entry
    by_name: frozenset[State]  # live states that are not at a `**` (the way into a symlink)


@dataclass
class _Walk:
    root: Path
    patterns: list[list[Segment]]
    include_dirs: bool
    workspace: Workspace
    deadline: float
    matches: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unreadable: int = 0
    more: bool = False
    timed_out: bool = False
    # The walk meets the same few state sets over and over (tens of thousands of entries,
    # a handful of sets): their moves and closures are computed once.
    _moves: dict[frozenset[State], _Moves] = field(default_factory=dict)
    _after: dict[frozenset[State], tuple[frozenset[State], _After]] = field(default_factory=dict)

    def closure(self, states: set[State]) -> set[State]:
        out = set(states)
        todo = list(states)
        while todo:
            p, i = todo.pop()
            segs = self.patterns[p]
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
        regexes: list[tuple[re.Pattern[str], State]] = []
        for p, i in live:
            segs = self.patterns[p]
            seg = segs[i]
            if seg is GLOBSTAR:
                on_dir.add((p, i))
                if i == len(segs) - 1:
                    on_any.add((p, i + 1))
            elif isinstance(seg, str):
                names.setdefault(seg, set()).add((p, i + 1))
            else:
                regexes.append((seg, (p, i + 1)))  # type: ignore[arg-type]
        made = _Moves(frozenset(on_dir), frozenset(on_any),
                      {k: frozenset(v) for k, v in names.items()}, tuple(regexes))  # fmt: skip
        self._moves[live] = made
        return made

    def after(self, reached: frozenset[State]) -> tuple[frozenset[State], _After]:
        """The closure of ``reached`` (as a set and as facts), cached."""
        hit = self._after.get(reached)
        if hit is not None:
            return hit
        full = frozenset(self.closure(set(reached)))
        live = frozenset((p, i) for p, i in full if i < len(self.patterns[p]))
        by_name = frozenset((p, i) for p, i in live if self.patterns[p][i] is not GLOBSTAR)
        made = (full, _After(len(live) < len(full), live, by_name))
        self._after[reached] = made
        return made

    def step(self, states: set[State], name: str, is_dir: bool) -> set[State]:
        live = frozenset((p, i) for p, i in states if i < len(self.patterns[p]))
        return set(self.after(self._reach(self.moves(live), name, is_dir))[0])

    @staticmethod
    def _reach(m: _Moves, name: str, is_dir: bool) -> frozenset[State]:
        reached = m.on_any | m.on_dir if is_dir else m.on_any
        hit = m.names.get(name)
        if hit is not None:
            reached = reached | hit
        for rx, target in m.regexes:
            if rx.fullmatch(name):
                reached = reached | {target}
        return reached

    def ended(self, states: set[State]) -> bool:
        return any(i == len(self.patterns[p]) for p, i in states)

    def start(self) -> None:
        first = self.after(frozenset((p, 0) for p in range(len(self.patterns))))[1]
        self.walk(str(self.root), "", first.live, False)

    def walk(self, directory: str, rel: str, live: frozenset[State], via_link: bool) -> None:
        if self.more or self.timed_out:
            return
        if time.monotonic() > self.deadline:
            self.timed_out = True
            return
        m = self.moves(live)
        prefix = directory if directory.endswith("/") else directory + "/"
        try:
            if m.literal:
                entries = [(n, *_kind(prefix + n)) for n in sorted(m.names)]
                entries = [e for e in entries if e[1] is not None]
            else:
                with os.scandir(directory) as it:
                    # d_type answers these without a stat per entry
                    entries = sorted((e.name, e.is_dir(follow_symlinks=False), e.is_symlink()) for e in it)
        except OSError:
            self.unreadable += 1
            return
        for name, plain_dir, is_link in entries:
            path = prefix + name
            is_dir = bool(plain_dir) or (bool(is_link) and self._linked_dir(path))
            reached = self._reach(m, name, is_dir)
            if not reached:
                continue
            facts = self.after(reached)[1]
            child_rel = f"{rel}/{name}" if rel else name
            if facts.ended:
                self.emit(path, child_rel, is_dir, bool(is_link))
                if self.more:
                    return
            if is_dir and facts.live:
                # Through a symlinked directory only by name, never by `**` (no cycles).
                below = facts.by_name if is_link else facts.live
                if below:
                    self.walk(path, child_rel, below, via_link or bool(is_link))

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
            return
        if len(self.matches) >= MAX_MATCHES:
            self.more = True
            return
        self.matches.append(rel)


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


def list_directory(directory: Path) -> str:
    """Kimi's top-level tree of a directory, shown when a pattern is refused."""

    def entries(d: Path) -> list[os.DirEntry[str]] | None:
        try:
            with os.scandir(d) as it:
                return sorted(it, key=lambda e: (not e.is_dir(follow_symlinks=False), e.name))
        except OSError:
            return None

    top = entries(directory)
    if top is None:
        return "└── [not readable]"
    if not top:
        return "(empty directory)"
    lines: list[str] = []
    shown = top[:LIST_TOP]
    for n, e in enumerate(shown):
        last = n == len(shown) - 1 and len(top) <= LIST_TOP
        is_dir = e.is_dir(follow_symlinks=False)
        lines.append(f"{'└── ' if last else '├── '}{e.name}{'/' if is_dir else ''}")
        if not is_dir:
            continue
        pad = "    " if last else "│   "
        kids = entries(Path(e.path))
        if kids is None:
            lines.append(f"{pad}└── [not readable]")
            continue
        for k, c in enumerate(kids[:LIST_CHILDREN]):
            klast = k == min(len(kids), LIST_CHILDREN) - 1 and len(kids) <= LIST_CHILDREN
            slash = "/" if c.is_dir(follow_symlinks=False) else ""
            lines.append(f"{pad}{'└── ' if klast else '├── '}{c.name}{slash}")
        if len(kids) > LIST_CHILDREN:
            lines.append(f"{pad}└── ... and {len(kids) - LIST_CHILDREN} more")
    if len(top) > LIST_TOP:
        lines.append(f"└── ... and {len(top) - LIST_TOP} more entries")
    return "\n".join(lines)


def _glob(params: GlobParams, workspace: Workspace) -> Outcome:
    shown, root = workspace.resolve_search_dir(params.directory)
    if starts_with_globstar(params.pattern):
        return Outcome.error(
            f"Pattern `{params.pattern}` starts with '**' which is not allowed. This would "
            "recursively search all directories and may include large directories like "
            "`node_modules`. Use more specific patterns instead. For your convenience, a list of "
            f"all files and directories in the top level of `{shown}` is provided below.",
            "Unsafe pattern",
            output=list_directory(root),
        )
    walk = _Walk(root, compile_pattern(params.pattern), params.include_dirs, workspace,
                 time.monotonic() + WALK_BUDGET_S)  # fmt: skip
    if walk.patterns:
        walk.start()
    n = len(walk.matches)
    if walk.more:
        msg = (f"Found more than {MAX_MATCHES} matches for pattern `{params.pattern}`. Only the "
               f"first {MAX_MATCHES} matches are returned. You may want to use a more specific "
               "pattern.")  # fmt: skip
    elif n:
        msg = f"Found {n} matches for pattern `{params.pattern}`."
    else:
        msg = f"No matches found for pattern `{params.pattern}`."
    if walk.timed_out:
        msg += f" The search stopped after {WALK_BUDGET_S:.0f}s; results are partial."
    if walk.unreadable:
        msg += f" {walk.unreadable} unreadable director{'y' if walk.unreadable == 1 else 'ies'} skipped."
    if walk.skipped:
        msg += " " + skipped_secrets_warning(walk.skipped)
    facts = GlobFacts(matches=n, truncated=walk.more, skipped_sensitive=len(walk.skipped))
    return Outcome(output="\n".join(walk.matches), message=msg, structured=facts.model_dump())


async def glob_tool(params: GlobParams, env: ToolEnv) -> Outcome:
    try:
        return await anyio.to_thread.run_sync(_glob, params, env.workspace, abandon_on_cancel=True)
    except PathError as exc:
        return Outcome.from_path_error(exc)


DESCRIPTION = load_description("glob", MAX_MATCHES=MAX_MATCHES)
