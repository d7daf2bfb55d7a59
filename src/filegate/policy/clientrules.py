# size: one job, SPEC §8.5's client rules (ignore files, Claude Code settings) and their verdicts
"""The rules users already wrote for their agents, as filegate's verdicts (SPEC §8.5).

Sources: the AI ignore files (:data:`IGNORE_FILES`, gitignore syntax, each applying to its own
directory's subtree, nested ones included, judged with policy/gitignore.py, the matcher Glob
uses for `.gitignore`) and Claude Code's ``permissions.deny`` / ``permissions.ask`` rules with
``Read(...)``, ``Edit(...)``, ``Write(...)`` in the workspace's `.claude/settings.json`,
`.claude/settings.local.json` and the user's `~/.claude/settings.json`.

A rule that names only a tool (``Read``, ``Edit`` with no path) is not a path rule: it switches
Claude Code's own tool off (SPEC §9's routing), binds nothing of filegate's and allows nothing.
Only the user's own ``~/.claude/settings.json`` is read for ``permissions.allow`` ``Edit(...)`` and
``Write(...)`` rules (a cloned repository's `.claude/` must not grant itself writes).

Verdicts, on a resolved (real) path:

- :meth:`ClientRules.read_source`: hidden for reading (an ignore file, or a ``Read`` deny rule):
  the path is sensitive — refused, left out of searches and counted.
- :meth:`ClientRules.write_rule`: ``deny`` (an ``Edit``/``Write`` deny rule: refused without a
  question) or ``ask`` (an ``ask`` rule, or a rule file itself: always asked).
- :meth:`ClientRules.allow_source`: the user's allow rule that lets a write through unasked
  (policy/grants.py decides when it counts: never for a path asked about every time).

A rule file that cannot be used (a symlink, not a regular file, over :data:`MAX_RULE_BYTES`, not
JSON of the documented shape) fails closed: :meth:`ClientRules.check` raises on every tool call
until it is fixed, and an ignore file found broken mid-walk hides its whole subtree meanwhile.

Reloading: each call starts with :meth:`check`, which forgets which ignore files each directory
holds; a file is re-read only when its (dev, ino, size, mtime_ns, ctime_ns) changed.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

from filegate.errors import PathError
from filegate.policy.escape import escape
from filegate.policy.gitignore import RuleSet, compile_ignore, nfc

IGNORE_FILES = (".cursorignore", ".geminiignore", ".aiexclude", ".aiignore", ".codeiumignore")
CLAUDE_SETTINGS = (".claude/settings.json", ".claude/settings.local.json")
USER_SETTINGS = ".claude/settings.json"  # under the user's home
# A rule file larger than this is not a list of rules someone wrote: it fails closed.
MAX_RULE_BYTES = 1 << 20

# A folder changed this recently may change again within one timestamp tick: not remembered.
RACY_NS = 2_000_000_000
Verdict = Literal["deny", "ask", "allow"]
Signature = tuple[int, int, int, int, int]  # dev, ino, size, mtime_ns, ctime_ns
# Reads one rule file (path, follow symlinks) → (signature, bytes), or None when it does not
# exist; raises RuleFileError when it cannot be used. fsio's careful open (tools/search/ignores.py).
Reader = Callable[[str, bool], "tuple[Signature, bytes] | None"]


class RuleFileError(Exception):
    """A rule file that cannot be used; ``str()`` says what is wrong (never its content).
    ``folder``: a folder on its way that this process may not enter, when that is the cause."""

    def __init__(self, why: str, folder: str | None = None) -> None:
        super().__init__(why)
        self.folder = folder


def signature(st: os.stat_result) -> Signature:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(frozen=True, slots=True)
class Source:
    """One rule file, as a message names it."""

    shown: str  # workdir-relative or ~/…, escaped


@dataclass(frozen=True, slots=True)
class ClaudeRule:
    """One ``Read``/``Edit``/``Write`` rule, as a gitignore line under ``base``."""

    tool: Literal["Read", "Edit", "Write"]
    verdict: Verdict
    text: str  # as written in the file (for `filegate rules` only: never in a tool's message)
    base: str  # the directory the pattern is relative to
    rules: RuleSet
    source: Source
    # The pattern's literal start (base-relative): every path it hides starts with it ("" for a
    # name pattern, which matches at any depth, or one that starts with a wildcard).
    lead: str = ""

    def may_match_in(self, folder: str) -> bool:
        """Whether the rule could hide a file directly in ``folder`` (a real path): the folder
        is under its base, and its files' paths can start with the pattern's literal start."""
        under = self.base if self.base.endswith("/") else self.base + "/"
        if not (folder + "/").startswith(under):
            return False
        files = (folder + "/")[len(under) :]  # "" for the base itself, else "rel/"
        lead = self.lead
        return files.startswith(lead) or (lead.startswith(files) and "/" not in lead[len(files) :])


@dataclass(frozen=True, slots=True)
class IgnoreFile:
    source: Source
    rules: RuleSet | None  # None: no rule in it
    broken: bool = False  # could not be used: its whole subtree is hidden


def hides(rs: RuleSet, rel: str) -> bool:
    """Whether ``rs`` ignores the path ``rel`` (relative to its folder), git's way: the path or
    a folder it is under; nothing under an ignored folder comes back."""
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        if decide(rs, "/".join(parts[:i]), parts[i - 1], i < len(parts)):
            return True
    return False


def decide(rs: RuleSet, path: str, name: str, is_dir: bool) -> bool | None:
    """The last matching line's verdict on one entry (True: ignored, False: re-included by
    ``!``, None: no line matches). Compared in NFC, as the rules were compiled."""
    path, name = nfc(path), nfc(name)
    if not (rs.any_name is not None and rs.any_name.fullmatch(name)) and not (
        rs.any_path is not None and rs.any_path.fullmatch(path)
    ):
        return None  # no line's pattern matches at all (one regex each, compiled with the file)
    for rule in rs.rules:  # last line first
        if rule.dirs_only and not is_dir:
            continue
        if rule.regex.fullmatch(name if rule.on_name else path):
            return not rule.negated
    return None


def literal_start(line: str) -> str:
    """The text every path a one-line rule hides starts with (relative to the rule's base):
    the anchored pattern up to its first wildcard or escape; "" for a name pattern."""
    body = line
    while body.endswith(" ") and not body.endswith("\\ "):  # as gitignore.rule_of reads it
        body = body[:-1]
    body = body.rstrip("/")
    if "/" not in body:
        return ""  # a name: it matches at any depth
    body = body.removeprefix("/")
    cut = next((i for i, c in enumerate(body) if c in "*?[\\"), len(body))
    return body[:cut]


class ClientRules:
    """The client rules of one workspace (its directories, workdir and the user's home)."""

    def __init__(
        self,
        dirs: Iterable[PurePath],
        workdir: PurePath,
        home: PurePath | None,
        read: Reader,
        *,
        windows: bool = False,
        fold_case: bool = False,
    ) -> None:
        self.read = read
        # Windows (pure logic, tested on any OS): every path is judged in its '/' spelling
        # (`C:/Users/me/p`), names compare without case where the file system's do (NTFS),
        # and Claude Code's rules see its POSIX form (`/c/Users/me/p`).
        self.windows, self.fold_case = windows, fold_case
        self.dirs = tuple(self.slashed(str(d)) for d in dirs)
        self.workdir = self.slashed(str(workdir))
        if home is not None and not (windows and os.name != "nt"):  # a Windows home is pure here
            home = PurePath(os.path.realpath(home))
        self.home = None if home is None else self.slashed(str(home))
        self._lock = threading.Lock()
        self._last_seen: int | None = None  # the rule files' stats at the last fingerprint
        self._generation = 0  # how many times they were seen to change
        self._ignore_cache: dict[str, tuple[Signature | None, IgnoreFile]] = {}
        self._settings_cache: dict[str, tuple[Signature | None, tuple[ClaudeRule, ...]]] = {}
        self._claude: tuple[ClaudeRule, ...] = ()
        self._broken: dict[str, str] = {}  # shown source → what is wrong
        self._dir_memo: dict[str, tuple[IgnoreFile, ...]] = {}  # per call: a folder's own files
        self._hidden_memo: dict[str, str | None] = {}  # per call: a folder hidden, and by what
        self._stack_memo: dict[str, tuple[tuple[str, IgnoreFile], ...]] = {}  # per call
        self._may_hide_memo: dict[str, bool] = {}  # per call: a folder's files need a check
        # A folder's stat → the ignore file names it holds (kept across calls).
        self._names_cache: dict[str, tuple[tuple[int, int, int, int], tuple[str, ...]]] = {}

    # --- per call ---------------------------------------------------------------------------

    def check(self) -> None:
        """Start of a tool call: reload what changed; PathError naming each unusable rule file."""
        self._dir_memo = {}  # the next look at a folder stats its ignore files again
        self._hidden_memo = {}
        self._stack_memo = {}
        self._may_hide_memo = {}
        files = self.settings_files()
        self._claude = tuple(
            rule for path, shown, follow in files for rule in self._settings(path, shown, follow)
        )
        for path, (_, known) in list(self._ignore_cache.items()):
            if known.broken:
                self._ignore_file(path)  # fixed (or removed): forgotten
        for top in self.dirs:
            self._files_in(top)  # the workspace's own files: a broken one is said now
        if self._broken:
            what = "; ".join(f"`{shown}` {why}" for shown, why in sorted(self._broken.items()))
            raise PathError(
                f"A client rule file cannot be used: {what}. filegate refuses every call until it "
                "is fixed (a rule it cannot read might hide anything), or until the server runs "
                "with `--client-rules off`. `filegate rules` lists the rule files.",
                "Client rule file unusable",
            )

    def settings_files(self) -> list[tuple[str, str, bool]]:
        """(path, shown, follow symlinks) of each Claude Code settings file, in precedence
        order: the workspace's local, then its shared, then the user's."""
        found = []
        for d in self.dirs:
            for rel in reversed(CLAUDE_SETTINGS):
                found.append((f"{d}/{rel}", self.shown(f"{d}/{rel}"), False))
        if self.home is not None:
            # The user's own file may be a dotfile manager's symlink: it is not a cloned repo's.
            found.append((f"{self.home}/{USER_SETTINGS}", "~/" + USER_SETTINGS, True))
        return found

    def fingerprint(self) -> int:
        """Changes whenever a rule file filegate knows of changes, appears or goes, and never
        comes back to an earlier value (a remembered walk of a tree is only reused under the
        same fingerprint, and one made under rules since changed back must not be)."""
        sigs: list[tuple[str, Signature | None]] = []
        for path in sorted([*self._ignore_cache, *self._settings_cache]):
            try:
                # The user's settings may be a symlink, whose target's edits count.
                sigs.append((path, signature(os.stat(path, follow_symlinks=path in self._settings_cache))))
            except OSError:
                sigs.append((path, None))
        seen = hash(tuple(sigs))
        with self._lock:
            if seen != self._last_seen:
                self._last_seen = seen
                self._generation += 1
            return hash((seen, self._generation))

    # --- verdicts ---------------------------------------------------------------------------

    def read_source(self, real: str) -> str | None:
        """The rule file that hides ``real`` from reading (shown), or None."""
        if self.windows:
            real = self.slashed(real)
        if not self.may_hide_in(real.rsplit("/", 1)[0]):
            return None
        hit = self._ignored_by(real)
        if hit is not None:
            return hit
        rule = self._claude_match(real, ("Read",), ("deny",))
        return rule.source.shown if rule is not None else None

    def may_hide_in(self, folder: str) -> bool:
        """Whether any rule could hide a file directly in ``folder`` (a real path): an ignore
        file in force there (in it or above it: only those can hide the folder itself too), or
        a ``Read`` deny rule that could match there. Where none can, its files need no check
        of their own (a search's walk clears them by name); worked out once per folder per call."""
        if self.windows:
            folder = self.slashed(folder)
        memo = self._may_hide_memo  # this call's: a reset by the next call's check() is not written to
        known = memo.get(folder)
        if known is None:
            top = self._home_dir(folder + "/")
            claude = self.claude_form(folder)
            known = (top is not None and bool(self._stack(folder, top))) or any(
                rule.tool == "Read" and rule.verdict == "deny" and rule.may_match_in(claude)
                for rule in self._claude
            )
            memo[folder] = known
        return known

    def write_rule(self, real: str) -> tuple[Verdict, str] | None:
        """``("deny", source)``, ``("ask", source)`` or None for a write to ``real``."""
        real = self.slashed(real)
        denied = self._claude_match(real, ("Edit", "Write"), ("deny",))
        if denied is not None:
            return "deny", denied.source.shown
        asked = self._claude_match(real, ("Edit", "Write"), ("ask",))
        if asked is not None:
            return "ask", asked.source.shown
        own = self.rule_file(real)
        return ("ask", own) if own is not None else None

    def allow_source(self, real: str) -> str | None:
        """The file (shown) whose ``allow`` ``Edit``/``Write`` rule names ``real``, or None: only
        the user's own settings hold such rules here (see :meth:`parse_settings`)."""
        rule = self._claude_match(self.slashed(real), ("Edit", "Write"), ("allow",))
        return rule.source.shown if rule is not None else None

    def rule_file(self, real: str) -> str | None:
        """``real`` shown, if it is a rule file itself (a write to it could unhide what it hides)."""
        real = self.slashed(real)
        parent, _, name = self.folded(real).rpartition("/")
        if name in IGNORE_FILES and self._home_dir(real) is not None:
            return self.shown(real)
        settings = name in ("settings.json", "settings.local.json") and parent.endswith("/.claude")
        user = self.home is not None and self.folded(real) == self.folded(f"{self.home}/{USER_SETTINGS}")
        if settings and (self._home_dir(real) is not None or user):
            return self.shown(real)
        return None

    def claude_rules(self) -> tuple[ClaudeRule, ...]:
        return self._claude

    def shown(self, real: str) -> str:
        """A rule file's name in messages: workdir-relative inside it, ~/… in the home, escaped."""
        real = self.slashed(real)
        if self.folded(real) == self.folded(self.workdir):
            return "."
        if self.starts(real, self.workdir + "/"):
            return escape(real[len(self.workdir) + 1 :])
        if self.home is not None and self.starts(real, self.home + "/"):
            return escape("~/" + real[len(self.home) + 1 :])
        return escape(real)

    def reason(self, exc: RuleFileError) -> str:
        """What is wrong with a rule file, naming the real cause when it is a folder on its way
        (an unreadable workspace or home folder: the rule file is only where it shows first)."""
        if exc.folder is None:
            return str(exc)
        folder = self.folded(self.slashed(exc.folder))
        if folder == self.folded(self.workdir):
            where = "the workspace folder itself"
        elif folder in (self.folded(d) for d in self.dirs):
            where = f"the workspace folder `{self.shown(exc.folder)}`"
        elif self.home is not None and folder == self.folded(self.home):
            where = "the home folder `~`"
        else:
            where = f"the folder `{self.shown(exc.folder)}`"
        return f"cannot be read: this user may not enter {where} (permission denied)"

    # --- spellings (Windows) ----------------------------------------------------------------

    def slashed(self, path: str) -> str:
        """``path`` with '/' between its parts (Windows: backslashes turned)."""
        return path.replace("\\", "/") if self.windows else path

    def folded(self, path: str) -> str:
        """``path`` as names compare here (lower case where the file system folds case, as
        ``ntpath.normcase`` does; the same length, so offsets into it hold for ``path``)."""
        return path.lower() if self.fold_case else path

    def starts(self, path: str, prefix: str) -> bool:
        return self.folded(path[: len(prefix)]) == self.folded(prefix)

    def claude_form(self, path: str) -> str:
        """A '/'-spelled path as Claude Code's rules see it: on Windows a drive's path in its
        POSIX form (`C:/Users/x` → `/c/Users/x`), which `//c/...` rules name; folded as names
        compare, in NFC (its rules' patterns are)."""
        path = nfc(path)
        if self.windows and len(path) >= 3 and path[1] == ":" and path[2] == "/":
            path = "/" + path[0].lower() + path[2:]
        return self.folded(path)

    # --- ignore files -----------------------------------------------------------------------

    def _home_dir(self, real: str) -> str | None:
        """The workspace directory ``real`` is inside of (component-wise), or None."""
        for d in self.dirs:
            if self.starts(real, d + "/"):
                return d
        return None

    def _ignored_by(self, real: str) -> str | None:
        top = self._home_dir(real)
        if top is None:
            return None  # ignore files bind their own subtree, and only inside the workspace
        folder, name = real.rsplit("/", 1)
        return self._dir_hidden(folder, top) or self._last_part_hidden(folder, top, name, False)

    def _dir_hidden(self, folder: str, top: str) -> str | None:
        """The file that hides ``folder`` itself or a folder above it (up to ``top``), once per
        folder per call: a file below is then judged by its own name only (git's rule that
        nothing under an ignored folder comes back)."""
        memo = self._hidden_memo
        chain = []
        while folder != top and folder not in memo and len(folder) > len(top):
            chain.append(folder)
            folder = folder.rsplit("/", 1)[0]
        hit = memo.get(folder)
        for below in reversed(chain):
            if hit is None:
                parent, name = below.rsplit("/", 1)
                hit = self._last_part_hidden(parent, top, name, True)
            memo[below] = hit
        return hit

    def _last_part_hidden(self, parent: str, top: str, name: str, is_dir: bool) -> str | None:
        """The file that ignores the entry ``name`` of ``parent`` by the entry's own path."""
        for folder, f in reversed(self._stack(parent, top)):  # the deepest file is named
            rel = name if folder == parent else f"{parent[len(folder) + 1 :]}/{name}"
            if f.broken or (f.rules is not None and decide(f.rules, rel, name, is_dir)):
                return f.source.shown
        return None

    def _stack(self, folder: str, top: str) -> tuple[tuple[str, IgnoreFile], ...]:
        """The ignore files in force in ``folder``: those of it and each folder above it up to
        ``top``, outermost first; worked out once per folder per call."""
        memo = self._stack_memo
        chain = []
        at = folder
        while at not in memo:
            chain.append(at)
            if len(at) <= len(top):
                break
            at = at.rsplit("/", 1)[0]
        stack = memo.get(at, ())
        for below in reversed(chain):
            stack = (*stack, *((below, f) for f in self._files_in(below or "/")))
            memo[below] = stack
        return stack

    def _files_in(self, folder: str) -> tuple[IgnoreFile, ...]:
        memo = self._dir_memo
        found = memo.get(folder)
        if found is None:
            each = (self._ignore_file(f"{folder}/{name}") for name in self._names_in(folder))
            found = tuple(f for f in each if f is not None)
            memo[folder] = found
        return found

    def _names_in(self, folder: str) -> tuple[str, ...]:
        """Which ignore file names ``folder`` holds: one stat of the folder when it did not
        change (an entry added, removed or renamed changes its mtime and ctime) instead of one
        per name. A folder changed within the file system's timestamp tick is looked at anew."""
        try:
            st = os.stat(folder, follow_symlinks=False)
        except OSError:
            return ()  # not there (a write's new folders): it holds nothing
        key = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        cached = self._names_cache.get(folder)
        if cached is not None and cached[0] == key:
            return cached[1]
        names = tuple(n for n in IGNORE_FILES if os.path.lexists(f"{folder}/{n}"))
        if time.time_ns() - st.st_ctime_ns > RACY_NS:
            self._names_cache[folder] = (key, names)
        return names

    def _ignore_file(self, path: str) -> IgnoreFile | None:
        cached = self._ignore_cache.get(path)
        try:
            st = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            if cached is not None:
                with self._lock:
                    self._ignore_cache.pop(path, None)
                    self._broken.pop(cached[1].source.shown, None)
            return None
        except OSError:
            st = None
        if cached is not None and st is not None and cached[0] == signature(st):
            return cached[1]
        shown = self.shown(path)
        source = Source(shown)
        try:
            read = self.read(path, False)
        except RuleFileError as exc:
            with self._lock:
                self._broken[shown] = self.reason(exc)
                self._ignore_cache[path] = (None, IgnoreFile(source, None, broken=True))  # read again
            return self._ignore_cache[path][1]
        if read is None:
            return None
        sig, data = read
        lines = nfc(data.decode("utf-8", "surrogateescape")).splitlines()
        found = IgnoreFile(source, compile_ignore(lines, self.fold_case) if lines else None)
        with self._lock:
            self._broken.pop(shown, None)
            self._ignore_cache[path] = (sig, found)
        return found

    # --- Claude Code settings ---------------------------------------------------------------

    def _settings(self, path: str, shown: str, follow: bool) -> tuple[ClaudeRule, ...]:
        try:
            st = os.stat(path, follow_symlinks=follow)
            sig: Signature | None = signature(st)
        except OSError:
            sig = None
        cached = self._settings_cache.get(path)
        if cached is not None and cached[0] == sig and sig is not None:
            return cached[1]
        try:
            read = self.read(path, follow)
            rules = () if read is None else self.parse_settings(path, shown, read[1])
        except RuleFileError as exc:
            self._broken[shown] = self.reason(exc)
            self._settings_cache.pop(path, None)
            return ()
        self._broken.pop(shown, None)
        if read is None:
            self._settings_cache.pop(path, None)
        else:
            self._settings_cache[path] = (read[0], rules)
        return rules

    def parse_settings(self, path: str, shown: str, data: bytes) -> tuple[ClaudeRule, ...]:
        try:
            doc = json.loads(data)
        except json.JSONDecodeError as exc:
            raise RuleFileError(
                f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
            ) from None
        except ValueError:  # not UTF-8
            raise RuleFileError("is not valid JSON (not UTF-8 text)") from None
        if not isinstance(doc, dict):
            raise RuleFileError("is not a JSON object")
        perms = doc.get("permissions", {})
        if not isinstance(perms, dict):
            raise RuleFileError("has a `permissions` that is not an object")
        # The folder a `/path` rule is relative to: the project a `.claude` folder belongs to.
        root = path.rsplit("/", 2)[0]
        source = Source(shown)
        out: list[ClaudeRule] = []
        # SPEC §11: allow rules count from the user's own file only (a workspace's are its
        # repository's, which must not grant itself writes).
        verdicts: tuple[Verdict, ...] = ("deny", "ask")
        if self.is_user_settings(path):
            verdicts += ("allow",)
        for verdict in verdicts:
            entries = perms.get(verdict, [])
            if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
                raise RuleFileError(f"has a `permissions.{verdict}` that is not a list of strings")
            for entry in entries:
                rule = self._claude_rule(entry, verdict, root, source)
                if rule is not None:
                    out.append(rule)
        return tuple(out)

    def is_user_settings(self, path: str) -> bool:
        """Whether ``path`` is the user's own ``~/.claude/settings.json``."""
        return self.home is not None and self.folded(self.slashed(path)) == self.folded(
            f"{self.home}/{USER_SETTINGS}"
        )

    def _claude_rule(self, entry: str, verdict: Verdict, root: str, source: Source) -> ClaudeRule | None:
        tool, _, rest = nfc(entry).strip().partition("(")
        tool = tool.strip()
        if tool not in ("Read", "Edit", "Write"):
            return None  # Bash(...), WebFetch(...), mcp__…: not about paths filegate serves
        if verdict == "allow" and tool == "Read":
            return None  # a read needs no approval
        if rest and not rest.endswith(")"):
            raise RuleFileError(f"has a `permissions.{verdict}` rule with no closing parenthesis")
        pattern = rest[:-1].strip()
        if not pattern:
            # SPEC §8.5: a rule naming only the tool (`Read`, `Edit()`) switches Claude Code's own
            # tool off (install --route-builtins writes such rules); it binds no path of filegate's.
            return None
        base, line = self.anchor(pattern, root)
        rules = compile_ignore([line], self.fold_case)
        if rules is None or base is None:  # a pattern that names nothing, or `~/` with no home
            return None
        lead = self.folded(literal_start(line))
        return ClaudeRule(tool, verdict, entry, base, rules, source, lead)  # type: ignore[arg-type]

    def anchor(self, pattern: str, root: str) -> tuple[str | None, str]:
        """Claude Code's path forms → (base directory, gitignore line relative to it):
        ``//abs`` from the file system's root, ``~/p`` from the home, ``/p`` from the project
        the settings file belongs to, ``./p`` and a bare ``p`` from the working directory (a
        bare name without '/' matches at any depth, gitignore's rule)."""
        if pattern.startswith("//"):
            return "/", "/" + pattern[2:].lstrip("/")
        if pattern.startswith("~/"):
            return self._base(self.home), "/" + pattern[2:]
        if pattern.startswith("/"):
            return self._base(root), pattern
        if pattern.startswith("./"):
            return self._base(self.workdir), "/" + pattern[2:]
        return self._base(self.workdir), pattern

    def _base(self, folder: str | None) -> str | None:
        return None if folder is None else self.claude_form(folder)

    def _claude_match(
        self, real: str, tools: tuple[str, ...], verdicts: tuple[str, ...]
    ) -> ClaudeRule | None:
        claude = self.claude_form(real)
        for rule in self._claude:
            if rule.tool not in tools or rule.verdict not in verdicts:
                continue
            under = rule.base if rule.base.endswith("/") else rule.base + "/"
            if claude.startswith(under) and hides(rule.rules, claude[len(under) :]):
                return rule
        return None
