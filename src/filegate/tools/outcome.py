"""What a tool returns, before any protocol sees it; and what a tool may ask of its caller."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from filegate.errors import Refusal
from filegate.policy.workspace import Workspace


@dataclass(frozen=True, slots=True)
class ImagePart:
    data: bytes
    mime: str


@dataclass(frozen=True, slots=True)
class ResourcePart:
    """A binary resource (video): the server sends it as an EmbeddedResource blob."""

    uri: str
    mime: str
    data: bytes


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str


MediaPart = ImagePart | ResourcePart | TextPart


@dataclass(slots=True)
class Outcome:
    """A tool's result: ``output`` is the data, ``message`` the summary the model reads after it."""

    output: str = ""
    message: str = ""
    is_error: bool = False
    brief: str = ""
    structured: dict[str, Any] | None = None
    parts: list[MediaPart] = field(default_factory=list)

    @classmethod
    def error(cls, message: str, brief: str = "", output: str = "") -> Outcome:
        return cls(output=output, message=message, is_error=True, brief=brief)

    @classmethod
    def from_refusal(cls, exc: Refusal) -> Outcome:
        """The error result for a refusal (any of ``filegate.errors``): its sentence, its brief
        and whatever it shows below the sentence."""
        return cls.error(exc.message, exc.brief, exc.output)

    # The name from before the error family (PathError was the only refusal then).
    from_path_error = from_refusal


class Reporter(Protocol):
    """Progress and log lines back to the client; both may be no-ops."""

    async def progress(self, done: float, total: float | None, message: str) -> None: ...

    async def log(self, level: Literal["debug", "info", "warning", "error"], text: str) -> None: ...


class SilentReporter:
    async def progress(self, done: float, total: float | None, message: str) -> None:
        return None

    async def log(self, level: Literal["debug", "info", "warning", "error"], text: str) -> None:
        return None


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """A write the user is asked about: everything the approval message shows and binds to."""

    tool: str
    shown: str  # path as shown to the user (workdir-relative when inside)
    real: Path
    inside: bool
    sensitive: bool
    old_hash: str  # sha256 of the bytes on disk ("" when the file does not exist)
    new_hash: str  # sha256 of the bytes to be written
    old_size: int
    new_size: int
    old_lines: int
    new_lines: int
    diff: str  # unified diff, already cut to a readable length
    created: bool = False  # the file does not exist yet
    notes: tuple[str, ...] = ()  # extra lines for the user (directories created, line endings)


@dataclass(frozen=True, slots=True)
class Decision:
    approved: bool
    route: str  # how it was decided, for the log: "elicited", "session", "auto", "no-elicitation"
    message: str = ""  # when refused: the sentence the model sees


class Approver(Protocol):
    def turn(self, path: Path) -> AbstractAsyncContextManager[None]:
        """Held around reading, asking about and writing ``path``: writes of one file that
        must be asked about are asked one at a time."""
        ...

    async def approve(self, request: WriteRequest) -> Decision: ...


@dataclass(frozen=True)
class ToolEnv:
    """What a tool may use: the workspace rules, the user's approval, a back channel."""

    workspace: Workspace
    approver: Approver
    reporter: Reporter = field(default_factory=SilentReporter)
    result_budget: int = 1 << 20
    image_max_side: int = 2048
