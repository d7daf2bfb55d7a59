"""The questions a write asks the user (SPEC §6), as rules with no protocol in them: the form
(approve [/ for this session] / reject), the message the user reads, Kimi's rejection
sentences and the limits on asking. server/approval.py asks them over MCP."""

from __future__ import annotations

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
APPROVE_SESSION = "approve_for_session"
REJECT = "reject"


def approval_schema(write_class: WriteClass | None) -> dict[str, Any]:
    """The form: one enum (approve [/ approve for this session] / reject) and a feedback text.

    ``write_class`` None: no session to remember an answer in, so no session choice.
    """
    values, titles = [APPROVE], ["Approve this write"]
    if write_class is not None:
        values.append(APPROVE_SESSION)
        titles.append(
            f"Approve, and allow further writes {write_class} the workspace this session without asking"
        )
    values.append(REJECT)
    titles.append("Reject")
    return {
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": values,
                "enumNames": titles,
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
    if not request.sensitive:
        return where
    return f"{where}, {request.guarded_as or 'SENSITIVE file (it may hold secrets)'}"


def approval_message(request: WriteRequest, *, changed: bool = False) -> str:
    """What the user reads. The first line holds the verdict before any path (SPEC §6); every
    path is escaped and every shown text went through escape_text (SPEC §2.9)."""
    # Escaped once already (tools.edit.writing._shown); escaped again without doubling its
    # backslashes, so no caller can put a raw line break in the question.
    path = escape_log(request.shown)
    if request.sensitive:
        action = "write" if request.tool == "WriteFile" else "edit"
    else:
        action = "create" if request.created else "change"
    lines = [f"{verdict(request)}: {request.tool} wants to {action} `{path}`."]
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
