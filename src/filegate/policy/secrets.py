"""Sensitive files (SPEC §2.6): matched case-insensitively on the resolved path."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# SPEC §2.6. Kimi's list plus the keys and dot-files it missed.
DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "!.env.example",
    "!.env.sample",
    "!.env.template",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "*.pem",
    "*.key",
    ".netrc",
    ".npmrc",
    ".pgpass",
    "credentials",
    ".aws/credentials",
    ".gcp/credentials",
)


def _glob_to_regex(pattern: str) -> tuple[str, str, str]:
    """A gitignore-style glob → (prefix, body, suffix) of a regex over a '/'-separated path
    that ends at the string's end. Split so that rules sharing a prefix and suffix can share
    them in one alternation: tried once per position, not once per pattern."""
    anchored = pattern.startswith("/")
    dir_only = pattern.endswith("/") and pattern.strip("/") != ""
    pattern = pattern.strip("/")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append(_segment_chars(pattern[i]) if pattern[i] != "[" else _char_class(pattern, i))
            i = _skip_class(pattern, i) if pattern[i] == "[" else i + 1
    prefix = "^/?" if anchored else "(?:^|/)"
    return prefix, "".join(out), ("/.*$" if dir_only else "(?:/.*)?$")


def _combine(rules: list[tuple[str, str, str]]) -> re.Pattern[str] | None:
    groups: dict[tuple[str, str], list[str]] = {}
    for prefix, body, suffix in rules:
        groups.setdefault((prefix, suffix), []).append(body)
    alternatives = [f"{p}(?:{'|'.join(bodies)}){s}" for (p, s), bodies in groups.items()]
    return re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None


def _segment_chars(ch: str) -> str:
    return {"*": "[^/]*", "?": "[^/]"}.get(ch, re.escape(ch))


def _skip_class(pattern: str, i: int) -> int:
    end = pattern.find("]", i + 2)
    return end + 1 if end != -1 else i + 1


def _char_class(pattern: str, i: int) -> str:
    end = pattern.find("]", i + 2)
    if end == -1:
        return re.escape("[")
    inner = pattern[i + 1 : end]
    if inner.startswith("!"):
        inner = "^" + inner[1:]
    return "[" + inner.replace("\\", "\\\\") + "]"


class _Rules:
    def __init__(self, patterns: Iterable[str]) -> None:
        include: list[tuple[str, str, str]] = []
        exclude: list[tuple[str, str, str]] = []
        for raw in patterns:
            p = raw.strip()
            if not p or p.startswith("#"):
                continue
            (exclude if p.startswith("!") else include).append(
                _glob_to_regex(p[1:] if p.startswith("!") else p)
            )
        self.include = _combine(include)
        self.exclude = _combine(exclude)

    def match(self, path: str) -> bool:
        if self.include is None or not self.include.search(path):
            return False
        return not (self.exclude is not None and self.exclude.search(path))


class SecretMatcher:
    """Decides whether a path names a sensitive file. User patterns only ever add."""

    def __init__(self, extra_patterns: Sequence[str] = ()) -> None:
        self._default = _Rules(DEFAULT_SECRET_PATTERNS)
        self._extra = _Rules(extra_patterns)
        self.patterns: tuple[str, ...] = (*DEFAULT_SECRET_PATTERNS, *extra_patterns)

    def is_sensitive(self, path: str) -> bool:
        """``path`` is a '/'-separated path (absolute or relative); its last part is the file."""
        return self._default.match(path) or self._extra.match(path)


def skipped_secrets_warning(names: Iterable[str]) -> str:
    """Kimi's warning sentence for files left out of a search."""
    unique = sorted(set(names))
    n = len(unique)
    shown = ", ".join(unique[:5])
    if n > 5:
        shown += f", ... ({n} files total)"
    return (
        f"Skipped {n} sensitive file(s) ({shown}) to protect secrets. "
        "These files may contain credentials or private keys."
    )
