"""gitignore(5) rules as matchers: the one ignore-file matcher filegate has (SPEC §4, §8.5).

Pure (no I/O): Glob walks with it (tools/search/ignores.py reads the files), and the client rules of
SPEC §8.5 (policy/clientrules.py) judge paths with it. git's precedence: deeper files first, the
last matching line of a file wins, `!` re-includes. The client rules compare in NFC (:func:`nfc`);
`.gitignore` does not (git and rg compare a name's bytes: Glob agrees with Grep there).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

MAX_FILE_RULES = 4000  # GitHub's longest .gitignore templates have a few hundred
# A name no file can have: only a rule that matches every name (`*`) matches it.
_PROBE = "\0"


def nfc(s: str) -> str:
    """``s`` in Unicode NFC: the client rules compare a pattern and a path in one normal form
    (SPEC §8.5, as the secret list does, §2.6), so a name typed NFC in a rule file hides a file
    stored NFD (archives made on macOS) and back. ASCII is its own NFC."""
    return s if s.isascii() else unicodedata.normalize("NFC", s)


@dataclass(frozen=True, slots=True)
class Rule:
    regex: re.Pattern[str]
    negated: bool
    dirs_only: bool
    on_name: bool  # no '/' in the pattern: it matches a name at any depth


@dataclass(frozen=True, slots=True)
class RuleSet:
    """The lines of one ignore file, last first, with one regex per kind to rule most paths out."""

    rules: tuple[Rule, ...]  # last line first: the first that matches decides
    any_name: re.Pattern[str] | None
    any_path: re.Pattern[str] | None


@dataclass(frozen=True, slots=True)
class Layer:
    rules: RuleSet
    lead: str  # prepended to a walk-relative path: the walk root relative to the file's folder
    strip: int  # characters cut from a walk-relative path: the file's folder below the root


@dataclass(frozen=True, slots=True)
class Ignores:
    """The ignore files in force in one directory of the walk, deepest first."""

    layers: tuple[Layer, ...] = ()

    def ignored(self, rel: str, name: str, is_dir: bool) -> bool:
        """Whether the entry ``rel`` (relative to the walk's root, last component ``name``) is ignored."""
        for layer in self.layers:
            rs = layer.rules
            path = None
            if rs.any_name is None or not rs.any_name.fullmatch(name):
                if rs.any_path is None:
                    continue
                path = layer.lead + rel[layer.strip :]
                if not rs.any_path.fullmatch(path):
                    continue
            for rule in rs.rules:
                if rule.dirs_only and not is_dir:
                    continue
                if rule.on_name:
                    if rule.regex.fullmatch(name):
                        return not rule.negated
                else:
                    if path is None:
                        path = layer.lead + rel[layer.strip :]
                    if rule.regex.fullmatch(path):
                        return not rule.negated
        return False

    def ignores_everything_in(self, rel: str) -> bool:
        """Whether every name in the directory ``rel`` ('' or ending in '/') is ignored (`*`)."""
        return self.ignored(rel + _PROBE, _PROBE, False) and self.ignored(rel + _PROBE, _PROBE, True)


def compile_ignore(lines: list[str], ignore_case: bool = False) -> RuleSet | None:
    """git's gitignore(5) lines as rules; None when there are none (or too many to honour).
    ``ignore_case``: names compare without case (git's core.ignorecase, the default on Windows)."""
    rules: list[Rule] = []
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    for line in lines:
        rule = rule_of(line, flags)
        if rule is not None:
            rules.append(rule)
    if not rules or len(rules) > MAX_FILE_RULES:
        return None
    names = [r.regex.pattern for r in rules if r.on_name]
    paths = [r.regex.pattern for r in rules if not r.on_name]
    return RuleSet(
        tuple(reversed(rules)),
        re.compile("|".join(f"(?:{p})" for p in names), flags) if names else None,
        re.compile("|".join(f"(?:{p})" for p in paths), flags) if paths else None,
    )


def rule_of(line: str, flags: int = re.DOTALL) -> Rule | None:
    # Trailing spaces are dropped unless escaped with a backslash.
    while line.endswith(" ") and not line.endswith("\\ "):
        line = line[:-1]
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    dirs_only = line.endswith("/") and not line.endswith("\\/")
    if dirs_only:
        line = line.rstrip("/")
    on_name = "/" not in line
    line = line.removeprefix("/")
    if not line:
        return None
    return Rule(re.compile(_translate(line), flags), negated, dirs_only, on_name)


def _translate(pat: str) -> str:
    """A gitignore glob as a regex over a '/'-separated path (`*`, `?` and `[..]` stay within
    one component; `**/`, `/**/` and a final `/**` cross components)."""
    out: list[str] = []
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        if c == "*":
            j = i
            while j < n and pat[j] == "*":
                j += 1
            whole = (i == 0 or pat[i - 1] == "/") and j - i == 2
            if whole and j == n:
                out.append(".*")
            elif whole and pat[j] == "/":
                out.append("(?:.*/)?")
                j += 1
            else:
                out.append("[^/]*")
            i = j
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            cls, i = _bracket(pat, i)
            out.append(cls)
        elif c == "\\" and i + 1 < n:
            out.append(re.escape(pat[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _bracket(pat: str, i: int) -> tuple[str, int]:
    """The character class at ``pat[i] == '['`` and the index after it; a lone '[' is literal."""
    j = i + 1
    negated = j < len(pat) and pat[j] in "!^"
    if negated:
        j += 1
    body: list[str] = []
    first = True
    while j < len(pat):
        c = pat[j]
        if c == "]" and not first:
            head = "[^/" if negated else "(?!/)["
            return head + "".join(body) + "]", j + 1
        if c == "\\" and j + 1 < len(pat):
            body.append(re.escape(pat[j + 1]))
            j += 2
        else:
            body.append(c if c == "-" else re.escape(c))
            j += 1
        first = False
    return re.escape("["), i + 1
