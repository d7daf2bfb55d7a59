"""The gate of a change set (SPEC §10): every path of an ApplyPatch call judged before anything
is read or shown, by the rules every single write meets (§2, §8.5), and by the set's own.

A set is refused whole, naming the path and why, when one of its paths is:

- sensitive (a secret pattern), hidden from AI tools by a client rule, or a client rule file:
  a single write would ask about it alone, with nothing of its content shown; a set shows
  every file's diff in one question, so it leaves them out (the single tools remain);
- covered by a ``deny`` ``Edit``/``Write`` rule, relative and outside the workspace, or outside
  it under ``--confine`` (``Workspace.resolve_for_write``'s own refusals, word for word);
- a symlink, or reached through one (any folder on its way): a set never follows a link and
  never removes one (a single write follows a link to its target, SPEC §2.10; a delete or a
  move of a link's target through the link is what a model does not mean);
- a directory, or anything but a regular file, where a file is to be changed, deleted or
  moved.

An ``ask`` rule's path passes, and makes the set asked whatever ``--approval`` says (§8.5).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from filegate.errors import PathError
from filegate.policy.workspace import ResolvedPath, Workspace

# What the set does with a path: change its text, write it whole (create or overwrite),
# delete it, move it away, or move a file onto it.
Role = Literal["edit", "write", "delete", "move", "target"]


@dataclass(frozen=True, slots=True)
class GatedPath:
    rp: ResolvedPath  # never sensitive: a set holds no sensitive file
    asked: bool = False  # an ``ask`` rule covers it: the set is asked whatever --approval says
    exists: bool = False  # a regular file is there now


def gate_path(workspace: Workspace, raw: str, role: Role) -> GatedPath:
    """``raw`` judged for ``role`` in a set; PathError names the path and the reason."""
    rp = workspace.resolve_for_write(raw, "edit" if role == "edit" else "write")
    asked = False
    if rp.sensitive:
        asked = _refuse_sensitive(workspace, rp)
        rp = replace(rp, sensitive=False, guarded_as="")
    _refuse_links(workspace, raw, rp)
    return GatedPath(rp, asked, _check_kind(rp, role))


def _refuse_sensitive(workspace: Workspace, rp: ResolvedPath) -> bool:
    """Refuse a path a set may not hold; True for an ``ask`` rule's (the set is then asked)."""
    key = workspace.rules.secret_key(str(rp.real))
    client = workspace.secrets.client
    why = ""
    if workspace.secrets.is_sensitive(key) and (hider := workspace.secrets.hidden_by(key)) is not None:
        why = f"is hidden from AI tools by a rule in `{hider}`"
    elif workspace.secrets.is_sensitive(key):
        why = "appears to contain secrets (matched sensitive file pattern)"
    elif client is not None and client.rule_file(key) is not None:
        why = "is a client rule file (it says what AI tools may read or change)"
    if why:
        raise PathError(
            f"`{rp.shown}` {why}, so ApplyPatch does not change it: nothing in the set was "
            "written. Leave it out of the set; WriteFile or StrReplaceFile ask the user about "
            "it alone.",
            "Sensitive file in set",
        )
    return True  # an ``ask`` rule: Workspace.resolve_for_write marks nothing else sensitive


def _refuse_links(workspace: Workspace, raw: str, rp: ResolvedPath) -> None:
    """No symlink as the path or as any folder on its way, walked as the caller wrote it (the
    workspace's own folders are real paths: a relative path starts below them)."""
    if os.name == "nt":  # pragma: no cover - resolve_for_write's Windows rules apply there
        return
    full = os.path.expanduser(raw) if raw.startswith("~") else raw
    base = Path(full) if os.path.isabs(full) else workspace.workdir / full
    here = Path(base.anchor)
    parts = base.parts[1:]  # no "." nor "" among them: a Path drops both
    for i, part in enumerate(parts, 1):
        here = here.parent if part == ".." else here / part
        try:
            st = os.lstat(here)
        except OSError:
            return  # not there (yet): nothing below it is either
        if stat.S_ISLNK(st.st_mode):
            shown = workspace.display(here)  # relative inside the workspace, escaped everywhere
            last = i == len(parts)  # the path itself (`adir/../link.txt` too), not a folder on its way
            what = "is a symlink" if last else f"is reached through the symlink `{shown}`"
            raise PathError(
                f"`{rp.shown}` {what}: ApplyPatch never follows a link nor removes one, so nothing "
                "in the set was written. Give the path of the file itself.",
                "Symlink in set",
            )


def _check_kind(rp: ResolvedPath, role: Role) -> bool:
    """Whether a regular file is there; PathError where one must be and is not, or where
    something else is (a directory, a FIFO, a device)."""
    try:
        st = os.lstat(rp.real)
    except FileNotFoundError:
        if role in ("edit", "delete", "move"):
            verb = {"edit": "edit", "delete": "delete", "move": "move"}[role]
            raise PathError(
                f"`{rp.shown}` does not exist, so there is nothing to {verb}. Nothing in the set "
                "was written.",
                "File not found",
            ) from None
        return False
    except OSError as exc:
        raise PathError(f"`{rp.shown}` cannot be examined: {exc.strerror}.") from None
    if stat.S_ISDIR(st.st_mode):
        raise PathError(
            f"`{rp.shown}` is a directory: ApplyPatch changes, deletes and moves files only. "
            "Nothing in the set was written.",
            "Is a directory",
        )
    if not stat.S_ISREG(st.st_mode):
        raise PathError(f"`{rp.shown}` is not a file. Nothing in the set was written.", "Invalid path")
    return True
