"""The workspace and the path rules of SPEC §2: resolve and contain (fsio.safeopen opens)."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from filegate.errors import PathError
from filegate.policy.escape import escape, unescape
from filegate.policy.pathrules import PathRules, for_this_os
from filegate.policy.secrets import SecretMatcher

Action = Literal["read", "write", "edit", "search"]


@dataclass(frozen=True, slots=True)
class ResolvedPath:
    """A caller's path after the rules: what to show, what to touch, where it stands."""

    shown: str  # the path as the caller gave it (`~` not expanded), escaped: used in messages
    real: Path  # symlinks resolved; the path every operation uses
    inside: bool  # within the (possibly roots-narrowed) workspace
    sensitive: bool
    # Why a write to it is handled like a sensitive file's, when that is not a secret pattern
    # (SPEC §8.5): what the approval question says of it in place of "may hold secrets".
    guarded_as: str = ""
    # False for a file guarded for writing only (a rule file, an `ask` rule's): its content is
    # no secret, so the write history keeps its previous content like any file's.
    content_secret: bool = True

    @property
    def secret(self) -> bool:
        """Whether nothing of its content may be kept or told (a sensitive file, not one
        guarded for writing only)."""
        return self.sensitive and self.content_secret


# Messages quote the caller's path; a huge one is shown by its ends (PATH_MAX is 4096).
MAX_SHOWN_PATH = 300


def abbreviate(path: str, *, separator: bool = False) -> str:
    """The path for a message: whole, or its start and end around an ellipsis if very long.
    ``separator``: the backslash is the path separator (Windows), shown as itself."""
    path = escape(path, separator=separator)  # a name can never forge a line or reorder a message (SPEC §2.9)
    if len(path) <= MAX_SHOWN_PATH:
        return path
    return f"{path[:200]}…{path[-80:]}"


def as_written(raw: str, full: str) -> str:
    """``full`` (the name ``raw`` stands for) with the caller's leading ``~`` or ``~user`` put
    back: a message shows `~/x` as written, not the home it stands for (SPEC §2.9)."""
    if not raw.startswith("~"):
        return full
    tilde = raw.replace(os.sep, "/").split("/", 1)[0]
    home = os.path.expanduser(tilde)
    if home == tilde or not full.startswith(home):
        return full
    return tilde + full[len(home) :]


# How many of a root's entries the case probe looks at for one with a cased letter.
_PROBE_ENTRIES = 64


@functools.lru_cache(maxsize=256)
def folds_case(root: str) -> bool:
    """Whether the file system holding ``root`` compares names without case (macOS and Windows
    by default): one of its names (or its own), case-swapped, stats as the same file."""
    candidates: list[tuple[str, str]] = []
    try:
        with os.scandir(root) as entries:
            for i, entry in enumerate(entries):
                if entry.name.swapcase() != entry.name:
                    candidates.append((root, entry.name))
                    break
                if i >= _PROBE_ENTRIES:
                    break
    except OSError:
        pass
    parent, name = os.path.split(root.rstrip("/\\") or root)
    if name.swapcase() != name:
        candidates.append((parent, name))
    for directory, entry_name in candidates:
        try:
            real = os.stat(os.path.join(directory, entry_name), follow_symlinks=False)
            swapped = os.stat(os.path.join(directory, entry_name.swapcase()), follow_symlinks=False)
        except OSError:
            return False  # the swapped spelling names nothing: the names differ by case
        return os.path.samestat(real, swapped)
    return os.name == "nt" or sys.platform == "darwin"  # nothing cased to probe: the OS default


@dataclass(frozen=True)
class Workspace:
    """workdir + add-dirs (all real paths), optionally narrowed by client roots."""

    workdir: Path
    add_dirs: tuple[Path, ...] = ()
    confine: bool = False
    secrets: SecretMatcher = field(default_factory=SecretMatcher)
    roots: tuple[Path, ...] | None = None  # client roots, already intersected with the dirs
    rules: PathRules = field(default_factory=for_this_os)  # the platform's path semantics
    # Names compare without case: None = probe each directory's file system (folds_case).
    case_insensitive: bool | None = None

    @property
    def dirs(self) -> tuple[Path, ...]:
        """The directories a path may be inside of."""
        if self.roots is not None:
            return self.roots
        return (self.workdir, *self.add_dirs)

    def narrowed(self, client_roots: list[Path]) -> Workspace:
        """Intersect the workspace with the client's roots: roots only ever narrow (SPEC §2.8)."""
        kept: list[Path] = []
        base = (self.workdir, *self.add_dirs)
        for root in client_roots:
            r = self.rules.module.realpath(self.rules.normalise(str(root)))
            for d in base:
                if self._within(r, str(d)):
                    kept.append(Path(r))
                elif self._within(str(d), r):
                    kept.append(d)
        unique = tuple(dict.fromkeys(kept))
        return replace(self, roots=unique)

    def folds_case(self, directory: str) -> bool:
        """Whether names under ``directory`` compare without case (set, or probed per root)."""
        return folds_case(directory) if self.case_insensitive is None else self.case_insensitive

    def _within(self, path: str, root: str) -> bool:
        return self.rules.within(path, root, fold_case=self.folds_case(root))

    def contains(self, real: str) -> bool:
        return any(self._within(real, str(d)) for d in self.dirs)

    def is_sensitive(self, real: str) -> bool:
        """The secret filter on a resolved path, as the platform's file system names it."""
        return self.secrets.is_sensitive(self.rules.secret_key(real))

    @property
    def _bs(self) -> bool:
        """Whether a backslash is this platform's path separator (Windows), never in a name."""
        return self.rules.sep == "\\"

    def display(self, real: Path) -> str:
        """A path for messages: relative to the workdir when inside it, else as is; escaped."""
        s = str(real)
        w = str(self.workdir)
        if s == w:
            return "."
        if self._within(s, w):
            return escape(
                s[len(w) + 1 :] if not w.endswith(self.rules.sep) else s[len(w) :], separator=self._bs
            )
        return escape(s, separator=self._bs)

    def resolve(self, raw: str, action: Action = "read") -> ResolvedPath:
        """Apply SPEC §2.1–2.5 to a caller's path, or raise PathError with Kimi's sentence."""
        if not raw:
            raise PathError("File path cannot be empty.", "Empty file path")
        self.check_client_rules()
        _check_encodable(raw)
        full = os.path.expanduser(raw) if raw.startswith("~") else raw
        paths = self.rules.module
        full = _spelling_that_names(
            full, lambda p: p if paths.isabs(p) else paths.join(self.workdir, p), separator=self._bs
        )
        shown = abbreviate(as_written(raw, full), separator=self._bs)
        full = self._checked_spelling(full, shown)
        is_abs = paths.isabs(full)
        joined = full if is_abs else paths.join(self.workdir, full)
        try:
            real = paths.realpath(joined)
        except OSError as exc:  # readlink of a symlink swapped mid-resolution (EINVAL)
            raise PathError(f"`{shown}` cannot be resolved: {exc.strerror}.") from None
        self._check_real(real, shown)
        inside = self.contains(real)
        if not inside:
            if not is_abs:
                what = "search" if action == "search" else f"{action} a file"
                raise PathError(
                    f"`{shown}` is not an absolute path. You must provide an absolute path to "
                    f"{what} outside the working directory."
                )
            if self.confine:
                raise PathError(
                    f"`{shown}` is outside the workspace. This server is confined to its "
                    "working directory and --add-dir directories.",
                    "Path outside workspace",
                )
        return ResolvedPath(shown, Path(real), inside, self.is_sensitive(real))

    def _checked_spelling(self, full: str, shown: str, brief: str = "Invalid path") -> str:
        """The platform's rewrites of a caller's path made explicit, or PathError (Windows:
        devices, streams, drive-relative paths, other machines' shares; see policy.pathrules)."""
        full = self.rules.normalise(full)
        why = self.rules.refusal(full)
        if why is None:
            share = self.rules.unc_share(full)
            if share is not None and all(self.rules.unc_share(str(d)) != share for d in self.dirs):
                why = "is on another machine's share; only shares that hold the workspace are used"
        if why is not None:
            raise PathError(f"`{shown}` {why}.", brief)
        return full

    def _check_real(self, real: str, shown: str, brief: str = "Invalid path") -> None:
        short = self.rules.short_name_part(real)
        if short is not None:
            raise PathError(
                f"`{shown}` has a part shaped like a Windows 8.3 short name ({escape(short)}) that "
                "is not a long name on disk; give the file's long name.",
                brief,
            )

    def check_client_rules(self) -> None:
        """Each call starts here: the client rules reloaded where their files changed, and a
        PathError while one of them cannot be used (SPEC §8.5: fail closed)."""
        if self.secrets.client is not None:
            self.secrets.client.check()

    def resolve_for_read(self, raw: str) -> ResolvedPath:
        """A path a reader (ReadFile, ReadMediaFile) may open: the rules, and never a secret."""
        rp = self.resolve(raw, "read")
        source = self.secrets.hidden_by(self.rules.secret_key(str(rp.real))) if rp.sensitive else None
        if source is not None:  # the rule's file is named, never the rule itself
            self.check_client_rules()  # a rule file found unusable on the way: that is the answer
            raise PathError(
                f"`{rp.shown}` is hidden from AI tools by a rule in `{source}`. Reading this file "
                "is blocked; the user can change that rule file to allow it.",
                "Hidden by client rule",
            )
        if rp.sensitive:
            raise PathError(
                f"`{rp.shown}` appears to contain secrets (matched sensitive file pattern). "
                "Reading this file is blocked to protect credentials.",
                "Sensitive file",
            )
        return rp

    def resolve_for_write(self, raw: str, action: Literal["write", "edit"]) -> ResolvedPath:
        """A path a write may go to, with the client rules' verdict (SPEC §8.5): a deny rule
        refuses it; an ask rule, or a rule file itself, makes it asked every time whatever
        --approval says, the way a sensitive file is (so `--approval auto` cannot let a model
        unhide what a rule hides)."""
        rp = self.resolve(raw, action)
        client = self.secrets.client
        if client is None:
            return rp
        key = self.rules.secret_key(str(rp.real))
        verdict = client.write_rule(key)
        if verdict is not None and verdict[0] == "deny":
            raise PathError(
                f"`{rp.shown}` is denied for writing by a rule in `{verdict[1]}`. Nothing was "
                "written; the user can change that rule file to allow it.",
                "Denied by client rule",
            )
        guarded_as = self._guarded_as(rp, key, verdict)
        if verdict is None and not guarded_as:
            return rp
        return replace(rp, sensitive=True, guarded_as=guarded_as, content_secret=rp.sensitive)

    def _guarded_as(self, rp: ResolvedPath, key: str, verdict: tuple[str, str] | None) -> str:
        """What the approval question calls a file the client rules guard, for what it is
        (SPEC §6: the verdict first): hidden by a rule, a rule file itself, or named by an
        ``ask`` rule. "" where the default words are true (a secret pattern, no rule)."""
        client = self.secrets.client
        assert client is not None
        if rp.sensitive:
            hider = client.read_source(key)
            return f"SENSITIVE file (hidden from AI tools by a rule in `{hider}`)" if hider else ""
        if verdict is None:
            return ""
        if client.rule_file(key) is not None:
            return "CLIENT RULE file (it says what AI tools may read or change: a change could unhide files)"
        return f"ASKED about always, by a rule in `{verdict[1]}`"

    def resolve_search_dir(self, raw: str | None) -> tuple[str, Path]:
        """Glob's ``directory``: absolute, an existing directory inside the workspace (Kimi)."""
        self.check_client_rules()
        if raw is None:
            if not self.contains(str(self.workdir)):  # client roots narrowed it away
                raise PathError(
                    "The working directory is outside the roots this client offered. Pass "
                    "`directory`: an absolute path inside one of the roots.",
                    "Directory outside roots",
                )
            return ".", self.workdir
        _check_encodable(raw)
        full = os.path.expanduser(raw) if raw.startswith("~") else raw
        full = _spelling_that_names(full, lambda p: p, separator=self._bs)
        shown = abbreviate(as_written(raw, full), separator=self._bs)
        full = self._checked_spelling(full, shown, "Invalid directory")
        if not self.rules.module.isabs(full):
            raise PathError(
                f"`{shown}` is not an absolute path. You must provide an absolute path to search.",
                "Invalid directory",
            )
        try:
            real = self.rules.module.realpath(full)
        except OSError as exc:  # readlink of a symlink swapped mid-resolution (EINVAL)
            raise PathError(f"`{shown}` cannot be resolved: {exc.strerror}.", "Invalid directory") from None
        self._check_real(real, shown, "Invalid directory")
        if not self.contains(real):
            raise PathError(
                f"`{shown}` is outside the workspace. You can only search within the working "
                "directory and additional directories.",
                "Directory outside workspace",
            )
        if not os.path.exists(real):
            raise PathError(f"`{shown}` does not exist.", "Directory not found")
        if not os.path.isdir(real):
            raise PathError(f"`{shown}` is not a directory.", "Invalid directory")
        return shown, Path(real)


def _check_encodable(raw: str) -> None:
    """A path the OS can take: no NUL byte, no lone surrogate (JSON can carry both)."""
    if "\0" in raw:
        raise PathError(f"`{abbreviate(raw)}` contains a NUL byte, which no file path can hold.")
    if not _encodable(raw):
        raise PathError(f"`{abbreviate(raw)}` contains a lone UTF-16 surrogate, which no file path can hold.")


def _encodable(path: str) -> bool:
    """No NUL, and every character the OS can take (undecodable bytes as surrogateescape)."""
    if "\0" in path:
        return False
    try:
        os.fsencode(path)
    except UnicodeEncodeError:
        return False
    return True


def _spelling_that_names(path: str, where: Callable[[str], str], *, separator: bool = False) -> str:
    """The caller's ``path`` with the escapes the server writes taken back (SPEC §2.9).

    Names are shown through :func:`escape`: ``caf\\xe9.py`` is the name with the undecodable
    byte 0xE9, ``caf\\\\xe9.py`` the name that holds a backslash. So the unescaped spelling is
    the one meant, also when a file with the literal spelling exists too. The literal one is
    taken only where the unescaped one names nothing, not even a directory to create it in,
    and the literal one does (a Windows share ``\\\\host\\share``, a name typed by hand).
    ``where`` turns a spelling into the path to look up (joined to the workdir if relative).
    """
    alt = unescape(path, separator=separator)
    if alt == path or not _encodable(alt):
        return path
    taken, literal = where(alt), where(path)
    if os.path.lexists(taken) or os.path.lexists(os.path.dirname(taken)):
        return alt
    if os.path.lexists(literal) or os.path.lexists(os.path.dirname(literal)):
        return path
    return alt
