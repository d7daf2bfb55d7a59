"""Glob's patterns: `*`, `?`, `[..]`, `**` and `{a,b}` compiled into per-directory segments
(refusing empty, absolute and `..` patterns), and the machine the walk moves through them: a
state is (pattern, segment), a set of states moves on each directory entry, and what a set
reached says (a match, the way on below) is worked out once per set.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from filegate.errors import PathError
from filegate.policy.escape import unescape
from filegate.policy.workspace import abbreviate

# Brace expansion of one pattern may not produce more alternatives than this.
MAX_BRACE_ALTERNATIVES = 256

GLOBSTAR = object()


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
class Moves:
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
class After:
    """Facts about a set of states reached on an entry."""

    ends_dir: bool  # some pattern is complete: the entry matches if it is a directory
    ends_file: bool  # some pattern not ending in `/` is complete: it matches as a file too
    live: frozenset[State]  # states that can still match below the entry
    by_name: frozenset[State]  # live states that are not at a `**` (the way into a symlink)


@dataclass
class States:
    """The patterns as a machine over directory entries: a state is (pattern, segment), and
    a set of them moves on each entry. The walk meets the same few sets over and over (tens of
    thousands of entries, a handful of sets): their moves and closures are computed once."""

    patterns: list[Compiled]
    known_moves: dict[frozenset[State], Moves] = field(default_factory=dict)
    known_after: dict[frozenset[State], After] = field(default_factory=dict)

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

    def moves(self, live: frozenset[State]) -> Moves:
        hit = self.known_moves.get(live)
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
        made = Moves(frozenset(on_dir), frozenset(on_any), frozenset(on_dir | on_any),
                      {k: frozenset(v) for k, v in names.items()}, leading, tuple(regexes))  # fmt: skip
        self.known_moves[live] = made
        return made

    def after(self, reached: frozenset[State]) -> After:
        """Facts about the closure of ``reached``, cached."""
        hit = self.known_after.get(reached)
        if hit is not None:
            return hit
        pats = self.patterns
        full = self.closure(set(reached))
        ended = [p for p, i in full if i == len(pats[p].segments)]
        live = frozenset((p, i) for p, i in full if i < len(pats[p].segments))
        made = After(
            ends_dir=bool(ended),
            ends_file=any(not pats[p].dirs_only for p in ended),
            live=live,
            by_name=frozenset((p, i) for p, i in live if pats[p].segments[i] is not GLOBSTAR),
        )
        self.known_after[reached] = made
        return made
