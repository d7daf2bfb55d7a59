"""The questions a write asks the user (SPEC §6), as rules with no protocol in them: the form
(approve [/ the grants of SPEC §11] / reject), the message the user reads, Kimi's rejection
sentences and the limits on asking. server/approval.py asks them over MCP."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from filegate.policy.escape import escape_log
from filegate.tools.edit.diffing import change_summary
from filegate.tools.outcome import WriteRequest

WriteClass = Literal["inside", "outside"]

# Kimi's rejection sentences (KIMI-REFERENCE §1, Approval).
REJECTED = (
    "The tool call is rejected by the user. Stop what you are doing and wait for the user to "
    "tell you how to proceed."
)
REJECTED_WITH_FEEDBACK = "The tool call is rejected by the user. User feedback: {feedback}"
CANCELLED = (
    "The user cancelled the approval of this write, so nothing was written. Stop what you are "
    "doing and wait for the user to tell you how to proceed."
)
SUPERSEDED = (
    "A newer write to `{path}` was asked about before the user answered this question, so "
    "this answer counts for nothing and nothing was written. Read the file again if you still "
    "need this change."
)
REPLAYED = "This approval was already used: an answer approves one write, once. Nothing was written."
UNSAFE_NOTE = (
    "Note: this change contains control, bidirectional, line-separator or invisible characters "
    "or stacked combining marks; they are shown escaped (\\xNN, \\uNNNN, \\UNNNNNNNN)."
)
APPROVE = "approve"
APPROVE_FILE = "approve_file"
APPROVE_FOLDER = "approve_folder"
APPROVE_SESSION = "approve_for_session"
REJECT = "reject"


@dataclass(frozen=True, slots=True)
class Choices:
    """What a question offers beside approve and reject (SPEC §6, §11): this file, its top
    folder (shown as `src/`), every write of its class; each "for this session", or for the
    time a 2026-07-28 HTTP client's grant handle holds (``lasting``)."""

    file: bool = False
    folder: str = ""  # the folder as shown, "" when not offered
    write_class: WriteClass | None = None
    lasting: str = "for this session"

    def values(self) -> list[str]:
        return [value for value, _ in self.listed()]

    def listed(self) -> list[tuple[str, str]]:
        """(value, title) of each choice, narrowest first."""
        out = [(APPROVE, "Approve this write")]
        if self.file:
            out.append((APPROVE_FILE, f"Approve this file {self.lasting}"))
        if self.folder:
            out.append((APPROVE_FOLDER, f"Approve edits under `{self.folder}` {self.lasting}"))
        if self.write_class is not None:
            where = f"{self.write_class} the workspace"
            out.append((APPROVE_SESSION, f"Approve all writes {where} {self.lasting}"))
        out.append((REJECT, "Reject"))
        return out


def approval_schema(choices: Choices) -> dict[str, Any]:
    """The form: one enum (approve [/ the grants offered] / reject) and a feedback text."""
    listed = choices.listed()
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": [value for value, _ in listed],
                "enumNames": [title for _, title in listed],
                "default": APPROVE,
            },
            "feedback": {
                "type": "string",
                "title": "Feedback",
                "description": "Optional: why, or what to do instead (the model reads this).",
            },
        },
        "required": ["decision"],
    }


def verdict(request: WriteRequest) -> str:
    """The question's first words: where the write lands and whether the file is sensitive."""
    where = "Inside the workspace" if request.inside else "OUTSIDE the workspace"
    if request.always_ask and not request.sensitive:  # a set holding a file an ask rule covers
        return f"{where}, {request.guarded_as or 'ASKED about always, by a client rule'}"
    if not request.sensitive:
        return where
    return f"{where}, {request.guarded_as or 'SENSITIVE file (it may hold secrets)'}"


def approval_message(request: WriteRequest, *, changed: bool = False) -> str:
    """What the user reads. The first line holds the verdict before any path (SPEC §6); every
    path is escaped and every shown text went through escape_text (SPEC §2.9)."""
    # Escaped once already (tools.edit.writing._shown); escaped again without doubling its
    # backslashes, so no caller can put a raw line break in the question.
    if request.title:  # a set: its files, their diffs and the notes come with the title
        lines = [f"{verdict(request)}: {request.title}"]
        if request.unsafe:
            lines.append(UNSAFE_NOTE)
        if changed:
            lines.append("A file changed since you were asked; this is the change as it stands now.")
        lines.extend(request.notes)
        return "\n".join([*lines, "", request.diff])
    path = escape_log(request.shown)
    if request.sensitive:
        action = "write" if request.tool == "WriteFile" else "edit"
    else:
        action = "create" if request.created else "change"
    # SPEC §8.1: a codec that is not UTF-8 is named in the first line.
    codec = f", encoded in {escape_log(request.codec)}" if request.codec else ""
    lines = [f"{verdict(request)}: {request.tool} wants to {action} `{path}`{codec}."]
    if request.unsafe:
        lines.append(UNSAFE_NOTE)
    if changed:
        lines.append("The file changed since you were asked; this is the change as it stands now.")
    if request.sensitive:
        why = "handled like a sensitive one" if request.guarded_as else "sensitive"
        lines.append(
            f"The diff is hidden because the file is {why}: its content, size and line "
            "counts are not shown. Below is the change as the model asked for it."
        )
    else:  # the same sentence a dry_run preview says
        lines.append(change_summary(request))
    lines.extend(request.notes)
    return "\n".join([*lines, "", request.diff])


def write_class(request: WriteRequest) -> WriteClass:
    return "inside" if request.inside else "outside"
