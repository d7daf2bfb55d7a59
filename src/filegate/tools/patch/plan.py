"""The plan of an ApplyPatch call (SPEC §10): one :class:`FileChange` per file, whichever form
the model used. ``changes`` (this module) and ``patch`` (:mod:`.v4a`) both compile to it, so the
gate, the question, the commit and the answer see one thing.

A file change is one of: edits (StrReplaceFile's edit objects), a whole content (create or
overwrite), a delete, or a move (optionally with edits, as V4A's ``*** Move to:``). The checks
here need no file: the shape of each change, and no path named twice; the paths themselves are
gated later, on their resolved names (tools/apply_patch.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, WithJsonSchema

from filegate.errors import EditFailed
from filegate.policy.escape import escape

# A set holds at most this many files: one question shows them all, and one commit holds the
# lock of each and, while it renames, three descriptors each (its folder, its temp, the file).
MAX_FILES = 100

Kind = Literal["edit", "write", "delete", "move"]


@dataclass(frozen=True, slots=True)
class PlanEdit:
    """One edit of a file's text: StrReplaceFile's ``{old, new, replace_all, match}``, and what
    a V4A hunk adds to narrow where it lands when its text alone is found more than once."""

    old: str  # "" only for a V4A hunk that only adds lines (inserted, see .hunks)
    new: str
    replace_all: bool = False
    match: Literal["tolerant", "exact"] = "tolerant"
    anchors: tuple[str, ...] = ()  # V4A ``@@ line`` headers: it lands after these lines, in order
    at_end: bool = False  # V4A ``*** End of File``: it lands at the file's end


@dataclass(frozen=True, slots=True)
class FileChange:
    """What happens to one file: edits, a whole content, a delete, or a move (with edits)."""

    path: str
    edits: tuple[PlanEdit, ...] = ()
    content: str | None = None
    delete: bool = False
    move_to: str | None = None

    @property
    def kind(self) -> Kind:
        if self.delete:
            return "delete"
        if self.move_to is not None:
            return "move"
        if self.content is not None:
            return "write"
        return "edit"


@dataclass(frozen=True, slots=True)
class Plan:
    changes: tuple[FileChange, ...]

    @property
    def paths(self) -> list[str]:
        """Every path the set touches, as given: each file's, and each move's target."""
        out: list[str] = []
        for change in self.changes:
            out.append(change.path)
            if change.move_to is not None:
                out.append(change.move_to)
        return out


class PlanError(EditFailed):
    """A set whose shape is wrong (no file needed to tell): nothing was read or written."""

    default_brief = "Invalid change set"

    def __init__(self, message: str) -> None:
        super().__init__(message + " Nothing was written.")  # brief: default_brief


# --- the ``changes`` form ------------------------------------------------------------------


# StrReplaceFile's edit object; its fields are described there (the schema stays short: SPEC
# §9's tool-list budget). An absent field is its default, never null, for the same reason.
class PatchEdit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    old: str
    new: str
    replace_all: bool = False
    match: Literal["tolerant", "exact"] = "tolerant"


class ChangeItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    # Described by reference: StrReplaceFile's schema beside it spells the edit object out.
    edits: Annotated[
        list[PatchEdit],
        WithJsonSchema(
            {"type": "array", "items": {"type": "object"}, "description": "StrReplaceFile's edits"}
        ),
    ] = []
    content: str | None = None  # create or overwrite
    delete: bool = False
    move_to: str = ""


def plan_from_changes(items: Sequence[ChangeItem]) -> Plan:
    """The ``changes`` list as a plan; PlanError names the first item that is malformed."""
    if not items:
        raise PlanError("`changes` is empty: give at least one file change.")
    out = []
    for number, item in enumerate(items, start=1):
        which = f"change {number} (`{escape(item.path)}`)"
        given = [
            name
            for name, there in (
                ("edits", bool(item.edits)),
                ("content", item.content is not None),
                ("delete", item.delete),
            )
            if there
        ]
        if item.move_to and given in ([], ["edits"]):
            pass  # a move, maybe with edits (V4A's Update File + Move to)
        elif len(given) != 1 or item.move_to:
            shown = " and ".join(f"`{g}`" for g in (*given, *(["move_to"] if item.move_to else [])))
            raise PlanError(
                f"{which} gives {shown or 'nothing to do'}: each change gives exactly one of "
                "`edits`, `content`, `delete: true` or `move_to` (a move may carry `edits`)."
            )
        edits = tuple(PlanEdit(e.old, e.new, e.replace_all, e.match) for e in item.edits)
        for n, edit in enumerate(edits, start=1):
            if edit.old == "":
                label = f"{which}, edit {n} (of {len(edits)})" if len(edits) > 1 else which
                raise PlanError(
                    f"{label}: `old` is empty. Give the exact text to replace; to write a whole "
                    "file, give `content`."
                )
        out.append(FileChange(item.path, edits, item.content, item.delete, item.move_to or None))
    return checked(Plan(tuple(out)))


def checked(plan: Plan) -> Plan:
    """The checks every plan passes, whichever form it came from: a bounded number of files,
    each edit well formed (StrReplaceFile's rules), no path named twice as given."""
    if len(plan.changes) > MAX_FILES:
        raise PlanError(
            f"The set changes {len(plan.changes)} files; one ApplyPatch call changes at most "
            f"{MAX_FILES}. Split it into several calls."
        )
    seen: dict[str, str] = {}
    for number, change in enumerate(plan.changes, start=1):
        which = f"change {number} (`{escape(change.path)}`)"
        if not change.path:
            raise PlanError(f"change {number} has an empty `path`.")
        if change.move_to is not None and not change.move_to:
            raise PlanError(f"{which} has an empty `move_to`.")
        _check_edits(change, which)
        for role, path in (("", change.path), ("the target of ", change.move_to)):
            if path is None:
                continue
            if path in seen:
                raise PlanError(
                    f"`{escape(path)}` is named twice in the set ({seen[path]}, and {role}{which}): "
                    "give each file once, with all its edits in one change."
                )
            seen[path] = f"{role}{which}"
    return plan


def _check_edits(change: FileChange, which: str) -> None:
    total = len(change.edits)
    for number, edit in enumerate(change.edits, start=1):
        label = f"{which}, edit {number} (of {total})" if total > 1 else which
        if edit.old == edit.new:
            raise PlanError(f"{label}: `old` is the same as `new`, so the edit would change nothing.")
