"""Ignore files, the one home of their reading and matching, for Glob and Grep (SPEC §4).

A cloned repository chooses its ignore files, so they are read the careful way
(:func:`read_rules`): never through a symlink, only when they are regular files (a FIFO cannot
hang the open), of a bounded size; at most :data:`MAX_FILE_RULES` rules a file and
:data:`MAX_WALK_BYTES` per walk; and only inside the workspace (the files above the searched
directory are read from the workspace folder down, never above it). A file past a limit is
not honoured: the walk then shows more, never less, and secrets are filtered on their own.

Grep hands the rules to rg (:func:`rules_at`, :func:`rules_below`, :func:`outer_rules` rewrite
them relative to the searched directory); Glob matches them itself (:class:`IgnoreReader`).
Glob honours `.gitignore` in every directory and `.git/info/exclude` of a repository inside the
workspace, with git's precedence (deeper files first, the last matching line of a file wins,
`!` re-includes). The walk never enters an ignored directory, which gives git's rule that
nothing under an excluded directory can be re-included.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from filegate.fsio import platform
from filegate.fsio.safeopen import open_then_verify
from filegate.policy.clientrules import MAX_RULE_BYTES, ClientRules, RuleFileError, Signature, signature
from filegate.policy.gitignore import MAX_FILE_RULES, Ignores, Layer, RuleSet, compile_ignore, rule_of
from filegate.policy.workspace import Workspace, folds_case
from filegate.settings import Settings

__all__ = ["MAX_FILE_RULES", "Ignores", "Layer", "RuleSet", "compile_ignore"]

IGNORE_NAME = ".gitignore"
VCS_DIRS = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")
# An ignore file larger than this is not a list of rules someone wrote: it is not used.
MAX_RULES_BYTES = 1 << 20

EXCLUDE_FILE = ".git/info/exclude"
MAX_WALK_BYTES = 8 << 20


@dataclass
class IgnoreReader:
    """Reads and compiles the ignore files one walk meets, within its byte budget."""

    read_bytes: int = 0
    _compiled: dict[tuple[str, ...], RuleSet | None] = field(default_factory=dict)

    def above(self, root: Path, workspace: Workspace) -> Ignores | None:
        """The ignore files of ``root``'s ancestors, from its workspace folder down; None when
        they ignore ``root`` or a folder on the way (the caller named it: all of it is wanted)."""
        top = max(
            (d for d in workspace.dirs if root.is_relative_to(d)), key=lambda d: len(d.parts), default=None
        )
        if top is None or top == root:
            return Ignores()
        found: list[tuple[Path, list[RuleSet]]] = []  # outermost folder first
        folder = top
        for part in root.relative_to(top).parts:
            found.append((folder, self._rulesets(str(folder) + "/", None, None)))
            if _seen_from(folder, found).ignored(part, part, True):
                return None
            folder = folder / part
        return _seen_from(root, found)

    def enter(
        self, prefix: str, rel: str, ignores: Ignores, has_ignore_file: bool | None, has_git_dir: bool | None
    ) -> Ignores:
        """The ignores in force in the directory ``prefix`` (``rel`` below the root); the two flags
        say whether its listing holds a `.gitignore` and a `.git` directory (None: not listed)."""
        new = [Layer(rs, "", len(rel)) for rs in self._rulesets(prefix, has_ignore_file, has_git_dir)]
        return Ignores((*new, *ignores.layers)) if new else ignores

    def _rulesets(self, prefix: str, has_ignore_file: bool | None, has_git_dir: bool | None) -> list[RuleSet]:
        """The folder's own .gitignore, then its repository's exclude file (lower precedence)."""
        found = []
        if has_ignore_file is not False:
            found.append(self._rules(prefix + IGNORE_NAME))
        if has_git_dir is not False and _real_dirs(prefix + ".git", prefix + ".git/info"):
            found.append(self._rules(prefix + EXCLUDE_FILE))
        return [rs for rs in found if rs is not None]

    def _rules(self, path: str) -> RuleSet | None:
        if self.read_bytes >= MAX_WALK_BYTES:
            return None
        lines = read_rules(path)  # Grep's careful reader: no symlink, regular, bounded
        if not lines:
            return None
        self.read_bytes += sum(len(line) + 1 for line in lines)
        key = tuple(lines)
        if key not in self._compiled:
            self._compiled[key] = compile_ignore(lines)
        return self._compiled[key]


def _real_dirs(*paths: str) -> bool:
    """Whether each path is a directory itself, not a symlink to one (the exclude file is
    opened by a path through `.git/info/`: neither may lead out of the repository)."""
    for path in paths:
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
        except OSError:
            return False
    return True


def _seen_from(folder: Path, found: list[tuple[Path, list[RuleSet]]]) -> Ignores:
    """The rules of ``found`` (ancestors of ``folder`` with their rule sets, outermost first) as
    they apply to entries of ``folder``, deepest file first."""
    layers = []
    for ancestor, rulesets in reversed(found):
        lead = "" if ancestor == folder else folder.relative_to(ancestor).as_posix() + "/"
        layers += [Layer(rs, lead, 0) for rs in rulesets]
    return Ignores(tuple(layers))


# --- rules handed to rg: rewritten relative to the searched directory -------------------


def read_rules(path: str, dir_fd: int | None = None) -> list[str] | None:
    """An ignore file's lines, if it is a regular file (not through a symlink) of sane size.
    Without ``dir_fd`` where the platform has none: opened by its real path and verified
    (:func:`open_then_verify`: no link anywhere on its path, the handle's own final path)."""
    before = None
    try:
        if dir_fd is None and not platform.has_dir_fd():
            fd = open_then_verify(Path(path), os.O_RDONLY | platform.NONBLOCK)
        else:
            if not platform.NOFOLLOW:  # Windows: the name must not be a link, and the open must reach it
                before = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
                if not stat.S_ISREG(before.st_mode):
                    return None
            fd = os.open(
                path,
                os.O_RDONLY | platform.NOFOLLOW | platform.NONBLOCK | platform.CLOEXEC | platform.BINARY,
                dir_fd=dir_fd,
            )
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_RULES_BYTES:
            return None
        if before is not None and not os.path.samestat(st, before):
            return None  # swapped between the check and the open
        data = os.read(fd, MAX_RULES_BYTES + 1)[:MAX_RULES_BYTES]
    except OSError:
        return None
    finally:
        os.close(fd)
    return data.decode("utf-8", "surrogateescape").splitlines()


def _split_rule(line: str) -> tuple[str, str, str] | None:
    """A gitignore line → (negation, pattern without leading/trailing '/', dir-only suffix)."""
    rule = line.rstrip() if not line.endswith("\\ ") else line
    if not rule or rule.startswith("#"):
        return None
    neg = ""
    if rule.startswith("!"):
        neg, rule = "!", rule[1:]
    suffix = "/" if rule.endswith("/") else ""
    rule = rule.rstrip("/")
    return (neg, rule, suffix) if rule else None  # "/" alone (or "!/") is no rule


def rules_below(lines: Iterable[str], sub: str) -> list[str]:
    """Rules of an ignore file in directory D, for a tree under D at ``sub`` (D-relative, '' =
    D itself), as rules relative to that tree."""
    out = []
    for line in lines:
        split = _split_rule(line)
        if split is None:
            continue
        neg, rule, suffix = split
        if "/" not in rule:  # unanchored: any depth, so also any depth below sub
            out.append(f"{neg}{rule}{suffix}")
            continue
        rule = rule.lstrip("/")
        if rule.startswith("**/"):
            out.append(f"{neg}{rule}{suffix}")
        elif not sub:
            out.append(f"{neg}/{rule}{suffix}")
        elif rule.startswith(sub + "/"):
            out.append(f"{neg}/{rule[len(sub) + 1 :]}{suffix}")
    return out


def rules_at(lines: Iterable[str], rel_dir: str) -> list[str]:
    """Rules of the ignore file in ``rel_dir`` (relative to the searched tree), relative to the
    tree's top."""
    if not rel_dir:
        return rules_below(lines, "")
    out = []
    for line in lines:
        split = _split_rule(line)
        if split is None:
            continue
        neg, rule, suffix = split
        if "/" not in rule:
            out.append(f"{neg}/{rel_dir}/**/{rule}{suffix}")
        else:
            out.append(f"{neg}/{rel_dir}/{rule.lstrip('/')}{suffix}")
    return out


def outer_rules(top: Path, workspace_dirs: Iterable[Path]) -> list[str]:
    """Rules for the tree at ``top`` from outside it but inside the workspace: the repository's
    `.git/info/exclude` and the `.gitignore` of each parent, outermost first."""
    home = next((d for d in workspace_dirs if top == d or d in top.parents), None)
    if home is None:  # outside the workspace: nothing above it is read
        return []
    chain = [top, *[p for p in top.parents if p == home or home in p.parents]]
    rules: list[str] = []
    repo = next((d for d in chain if _is_real_dir(d / ".git")), None)
    if repo is not None and _is_real_dir(repo / ".git" / "info"):
        lines = read_rules(str(repo / ".git" / "info" / "exclude"))
        if lines:
            rules += rules_below(lines, _relative(top, repo))
    for parent in reversed(chain[1:]):
        lines = read_rules(str(parent / IGNORE_NAME))
        if lines:
            rules += rules_below(lines, _relative(top, parent))
    return rules


def _relative(path: Path, ancestor: Path) -> str:
    return "" if path == ancestor else path.relative_to(ancestor).as_posix()


def _is_real_dir(p: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(p).st_mode)
    except OSError:
        return False


def pattern_matches(pattern: str, rel: str) -> bool:
    """Whether one gitignore-style ``pattern`` (as `.gitattributes` lines use them) matches the
    file ``rel`` ('/'-separated, relative to the pattern file's folder)."""
    rule = rule_of(pattern)
    if rule is None or rule.negated or rule.dirs_only:  # gitattributes has neither
        return False
    return rule.regex.fullmatch(rel.rsplit("/", 1)[-1] if rule.on_name else rel) is not None


# --- the client rules' files (SPEC §8.5) --------------------------------------------------------


def read_rule_file(path: str, follow: bool = False) -> tuple[Signature, bytes] | None:
    """The file's bytes and signature; None when it does not exist. RuleFileError when it is a
    symlink (unless ``follow``), not a regular file, or over the size cap. Opened non-blocking,
    so a FIFO cannot hang the call."""
    try:
        before = os.stat(path, follow_symlinks=follow)
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        raise RuleFileError(f"cannot be read ({exc.strerror})", blocked_folder(path)) from None
    except OSError as exc:
        raise RuleFileError(f"cannot be read ({exc.strerror})") from None
    if stat.S_ISLNK(before.st_mode):
        raise RuleFileError("is a symlink; a rule file must be a regular file")
    if not stat.S_ISREG(before.st_mode):
        raise RuleFileError("is not a regular file")
    if before.st_size > MAX_RULE_BYTES:
        raise RuleFileError(f"is larger than {MAX_RULE_BYTES // 1024} KiB")
    try:
        fd = os.open(
            path, os.O_RDONLY | platform.NONBLOCK | platform.CLOEXEC | (0 if follow else platform.NOFOLLOW)
        )
    except OSError as exc:
        raise RuleFileError(f"cannot be opened ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and os.path.samestat(st, before)):
            raise RuleFileError("changed while it was opened")
        data = os.read(fd, MAX_RULE_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_RULE_BYTES:
        raise RuleFileError(f"is larger than {MAX_RULE_BYTES // 1024} KiB")
    return signature(st), data


def blocked_folder(path: str) -> str | None:
    """The first folder on ``path``'s way that this process may not enter, if any."""
    effective = os.access in os.supports_effective_ids
    for folder in reversed(Path(path).parents):
        if not os.access(folder, os.X_OK, effective_ids=effective):
            return str(folder)
    return None


def client_rules_of(settings: Settings) -> ClientRules | None:
    """The client rules a server with these settings honours (None: ``--client-rules off``)."""
    if not settings.client_rules:
        return None
    dirs = (settings.workdir, *settings.add_dirs)
    fold = folds_case(str(settings.workdir))  # NTFS and APFS compare names without case
    return ClientRules(
        dirs, settings.workdir, Path.home(), read_rule_file, windows=os.name == "nt", fold_case=fold
    )
