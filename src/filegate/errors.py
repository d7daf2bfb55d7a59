"""Every refusal a tool can meet, in one family (a leaf module: it imports nothing of filegate).

A refusal is an exception whose text is meant for the model: ``message`` is the sentence it
reads, ``brief`` a few words that label it for filegate's own callers (install matches on
one; no result or log carries it), ``output`` anything to show below the message (an edit's
closest region). A tool turns one into an error result with
``filegate.tools.outcome.Outcome.from_refusal`` — never a stack trace.

Hierarchy::

    Refusal                 a refusal the model reads (message, brief, output, next step)
    ├── PathError           the path rules of SPEC §2 refuse the path, or it cannot be opened
    │                       (policy resolves, fsio opens; both raise it)
    ├── WriteError          a write that did not happen: too large, stale, the file changed
    │                       under it, the disk refused (fsio.atomic)
    ├── EditFailed          an edit that cannot be applied to the current text
    │                       (tools.str_replace)
    ├── MediaError          media that cannot be decoded or fitted (media.image, media.video);
    │                       its message ends a sentence ("it could not be decoded …")
    │                       that the tool begins with the path and type
    ├── Busy                no room in a process-wide memory budget within the wait
    │                       (fsio.loads): nothing was done, the call may be tried again
    └── Stopped             a call's work on a loaded file stopped at its deadline, or when
                            its client gave up (fsio.loads.Work): nothing was done

Other exceptions are not refusals: an ``OSError`` nothing expected, a bug. They are not turned
into friendly text here, so they are not hidden.
"""

from __future__ import annotations


class Refusal(Exception):
    """Something the model asked for and will not get; ``str(exc)`` is the sentence it sees."""

    default_brief = "Refused"

    def __init__(self, message: str, brief: str | None = None, output: str = "", next_step: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.brief = self.default_brief if brief is None else brief
        self.output = output
        self.next_step = next_step  # the result's last line, after ``output``: what to do


class PathError(Refusal):
    """A path the rules refuse, or one that cannot be opened as the rules require."""

    default_brief = "Invalid path"


class WriteError(Refusal):
    """A write that did not happen; nothing was written."""

    default_brief = "Failed to write file"


class EditFailed(Refusal):
    """An edit that cannot be applied: ``message`` for the model, ``output`` to show below it."""

    default_brief = "Failed to edit file"

    # Positional order kept from before the family existed: (message, output, brief).
    def __init__(self, message: str, output: str = "", brief: str | None = None, next_step: str = "") -> None:
        super().__init__(message, brief, output, next_step)


class MediaError(Refusal):
    """Media that cannot be decoded or fitted; ``str(exc)`` ends a sentence the tool begins."""

    default_brief = "Failed to read file"


class Busy(Refusal):
    """No room in a process-wide memory budget within the wait; nothing was done."""

    default_brief = "Server busy"


class Stopped(Refusal):
    """A call's work stopped at its deadline or when its client gave up; nothing was done."""

    default_brief = "Stopped"
