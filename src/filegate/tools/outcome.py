"""What a tool returns, before any protocol sees it; and what a tool may ask of its caller."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel

from filegate.errors import Refusal
from filegate.fsio.codec import FileCodec, decide_for_data
from filegate.fsio.history import WriteHistory
from filegate.fsio.loads import Work
from filegate.policy.workspace import Workspace
from filegate.settings import EditMatch
from filegate.tools.readguard.ledger import ChosenEncodings, ReadLedger


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


def lines_within(lines: list[str], room: int) -> list[str]:
    """The first of ``lines`` that fit in ``room`` characters, each with its line break."""
    kept: list[str] = []
    for line in lines:
        room -= len(line) + 1
        if room < 0:
            break
        kept.append(line)
    return kept


# JSON framing of one content block on the wire ({"type":"text","text":"…"}, {"type":"image",
# "data":"…","mimeType":"…"}), rounded up: a result budget counts what the client receives.
BLOCK_FRAME_CHARS = 64


@dataclass(slots=True)
class Outcome:
    """A tool's result: ``output`` is the data, ``message`` the summary the model reads after it.

    Text is all a client's model gets (SPEC §1): every fact needed to continue is in
    ``message``. The notable-event fields below only feed the log (server/notify.py); the
    text already says each of them.
    """

    output: str = ""
    message: str = ""
    is_error: bool = False
    parts: list[MediaPart] = field(default_factory=list)
    # The lines that end a result, each on its own line, in this order (SPEC §9): the write's
    # id (SPEC §8.4), a grant line (§11: the grant handle the approval of this write gave,
    # "Grant: g-…: edits under `src/` for 30 minutes."), the change notice (§8.3, set by the
    # server).
    write_id: str = ""
    grant: str = ""
    notice: str = ""
    next_step: str = ""  # an error's last line: what to do (SPEC §9)
    skipped_sensitive: int = 0  # files left out because they may hold secrets
    skipped_hidden: int = 0  # files left out because a client rule hides them (SPEC §8.5)
    timed_out: bool = False  # the work stopped at its time limit: results are partial
    partial: bool = False  # fewer results than found: the text says how to page

    @classmethod
    def error(cls, message: str, *, output: str = "", next_step: str = "") -> Outcome:
        return cls(output=output, message=message, is_error=True, next_step=next_step)

    @classmethod
    def from_refusal(cls, exc: Refusal) -> Outcome:
        """The error result for a refusal (any of ``filegate.errors``): its sentence, whatever
        it shows below the sentence and its next step (its ``brief`` labels it for callers, not
        clients)."""
        return cls.error(exc.message, output=exc.output, next_step=exc.next_step)


Handler = Callable[[Any, "ToolEnv"], Awaitable[Outcome]]


async def answer(handler: Handler, params: Any, env: ToolEnv) -> Outcome:
    """A tool's handler run at the tool boundary: a refusal it raises (``filegate.errors``)
    becomes its error result here, the one place that conversion happens."""
    try:
        return await handler(params, env)
    except Refusal as exc:
        return Outcome.from_refusal(exc)


@dataclass(frozen=True)
class ToolSpec:
    """One tool as the model sees it, declared once in the tool's own module (its ``SPEC``):
    Kimi's name, a human title (a client would derive "Readfile" from the name), the
    description (its .md file with the limits filled in), the params model, the handler, and
    whether it only reads (server/app.py turns that into MCP annotations)."""

    name: str
    title: str
    description: str
    params: type[BaseModel]
    handler: Handler
    read_only: bool
    # A few words a client's tool search finds it by (SPEC §9; default: the title).
    search_hint: str = ""


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
    """A write the user is asked about: everything the approval message shows and binds to.

    For a sensitive file nothing of its content is known when it is asked about (SPEC §2.6):
    the sizes are 0, ``old_hash`` is empty, ``new_hash`` is a digest of the requested operation
    and ``diff`` shows the change as the model asked for it, not the file.
    """

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
    diff: str  # unified diff, already cut to a readable length and escaped
    created: bool = False  # the file does not exist yet
    notes: tuple[str, ...] = ()  # extra lines for the user (directories created, line endings)
    unsafe: bool = False  # the change holds characters the diff shows escaped
    binary: bool = False  # the file is one no tool shows as text: sizes only, no diff or lines
    guarded_as: str = ""  # a sensitive file's kind when it is not a secret (ResolvedPath.guarded_as)
    codec: str = ""  # SPEC §8.1: a codec that is not UTF-8, and where from ("gb18030 (from .editorconfig)")
    # A set of files (ApplyPatch, an undone set): the question's first line after the verdict
    # ("ApplyPatch wants to change 3 files: ..."); "" for one file, said from the fields above.
    title: str = ""
    # Asked whatever --approval says and never "for the session", its content shown (a set
    # holding a file an ``ask`` rule covers, SPEC §8.5); ``sensitive`` also hides the content.
    always_ask: bool = False

    @property
    def asked_always(self) -> bool:
        return self.sensitive or self.always_ask

    # Every real path a write of several files touches (ApplyPatch, an undone set), which a
    # grant must cover whole; () for one file: ``real``.
    paths: tuple[Path, ...] = ()

    @property
    def targets(self) -> tuple[Path, ...]:
        """The real paths this write touches."""
        return self.paths or (self.real,)


# How a write was decided, for the log and the tests.
Route = Literal[
    "auto",  # --approval auto
    "session",  # approved earlier for this session
    "grant",  # SPEC §11: a grant for its file or folder (a session's, or a handle's)
    "allow-rule",  # SPEC §11: the user's own allow rule (~/.claude/settings.json)
    "no-elicitation",  # a client that cannot be asked: inside writes go, others are refused
    "strict",  # --approval strict and a client that cannot be asked
    "elicited",  # the user answered
    "elicited, approved for the session",
    "elicited, granted",  # the user answered "approve this file / edits under … for this session"
    "unanswered",  # handshake era: no answer within ASK_TIMEOUT_S
    "client-gone",  # handshake era: the client closed the stream the question went out on
    "elicitation-failed",  # the client failed to answer
    "stale",  # 2026-07-28: the file kept changing under the user's answers
    "superseded",  # a newer question about the file was asked before this answer came
    "replayed",  # 2026-07-28: this answer was already used
    "terminal",  # `filegate undo`: the user at the terminal (or --yes)
]


@dataclass(frozen=True, slots=True)
class Decision:
    approved: bool
    route: Route
    message: str = ""  # when refused: the sentence the model sees


class Approver(Protocol):
    """The user's say on a write. No lock is held while ``ask`` waits (SPEC §6)."""

    def settle(self, request: WriteRequest) -> Decision | None:
        """The decision when no question is needed (the mode, the session, a client that
        cannot be asked); None when the user must be asked. It decides from the path facts:
        the request it sees has no hashes or line counts yet (only a question pays for them)."""
        ...

    async def ask(self, request: WriteRequest) -> Decision:
        """Ask the user. 2026-07-28: may raise to end the call with a question; the answer
        then comes on the retry."""
        ...


@dataclass(frozen=True)
class ToolEnv:
    """What a tool may use: the workspace rules, the user's approval, a back channel."""

    workspace: Workspace
    approver: Approver
    reporter: Reporter = field(default_factory=SilentReporter)
    # Characters of text one result may have (SPEC §9: what the client shows whole, less the
    # room render's closing lines take); ``result_budget`` weighs the whole result, media included.
    text_budget: int = 1 << 20
    result_budget: int = 1 << 20
    # Base64 characters one media part may take on its own (Kimi Code); None: media share
    # ``result_budget`` with the text.
    media_part_budget: int | None = None
    image_max_side: int = 2048
    client: str = ""  # the client's own name (clientInfo.name), for the write log
    # What this session has read (SPEC §4 "Read before you change it"); None: the guard is off.
    reads: ReadLedger | None = None
    # "exact": StrReplaceFile matches only exactly (--edit-match); "tolerant": the ladder (§8.2).
    edit_match: EditMatch = "tolerant"
    # SPEC §8.1: the server's --legacy-encoding (a codec name or "auto"), and the codecs this
    # session's ReadFile calls named for files (None: not remembered).
    legacy_encoding: str | None = None
    encodings: ChosenEncodings | None = None
    # This call's work on a loaded file, stoppable at its deadline or when its client gives up
    # (fsio/loads.py): the matching ladder and the closest match check it as they go.
    work: Work = field(default_factory=Work)

    def chosen_encoding(self, real: Path) -> tuple[str, str] | None:
        """(codec, where from) a ReadFile of this session chose for ``real``, if any."""
        name = self.encodings.chosen(real) if self.encodings is not None else None
        return None if name is None else (name, "this session's ReadFile encoding")

    def codec_of(self, data: bytes, real: Path) -> FileCodec:
        """The codec of a file whose whole content is ``data`` (SPEC §8.1's order)."""
        return decide_for_data(data, real, self.legacy_encoding, self.chosen_encoding(real))

    # Where every write keeps its pre-image (SPEC §8.4); None: --history off.
    history: WriteHistory | None = None
