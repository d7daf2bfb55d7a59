"""The first answers on stdio, given while fastmcp is still being imported (issue 13.2).

Importing fastmcp and the MCP SDK takes ~1.5 s, and a client's opening (``initialize`` →
``notifications/initialized`` → ``tools/list``, or 2026-07-28's ``server/discover`` and a
stateless ``tools/list``) needs none of it: the answers are fixed for a given version and
settings profile. ``early_answers.json`` holds them as fastmcp itself produced them
(server/early_data.py makes the file; tests/server/test_early_answers.py checks it against
fastmcp for every profile and every client opening accepted here).

:func:`start` runs a thread that reads stdin and answers those requests while the main thread
imports and builds the real server; it stops at the first message it cannot answer exactly
(any other method, params or client capabilities it does not know, a batch, bad JSON) and
leaves that one and everything after it to the real server. :meth:`EarlySession.hand_over`
then gives server/stdio.py what was read and not answered, plus each request answered early,
replayed under a private id: so the real server holds the handshake-era session, and each of
its replies, held back from the client, is compared with the early one.

stdlib only: this module is imported before fastmcp, and must stay cheap.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import secrets
import select
import stat
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger("filegate")

DATA = Path(__file__).with_name("early_answers.json")
# The handshake-era versions answered early (SPEC §5: clients that open with `initialize`);
# any other requested version waits for the real server.
HANDSHAKE_PROTOCOLS = ("2025-06-18", "2025-11-25")
STATELESS_PROTOCOL = "2026-07-28"
META_PROTOCOL = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
# Whose installed versions must be the ones the answers were made with.
PINNED = ("fastmcp", "mcp")
PROFILES = ("read-write", "read-only")
# Client capabilities with which the answers are known (tested) to be the same; any other
# capability, or another value, waits for the real server.
ACCEPTED_CAPABILITIES: dict[str, list[dict[str, Any]]] = {
    "roots": [{}, {"listChanged": True}, {"listChanged": False}],
    "sampling": [{}],
    "elicitation": [{}, {"form": {}}, {"url": {}}, {"form": {}, "url": {}}],
}
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
# What fastmcp reads from the environment when first imported (server/app.py applies these);
# any other FASTMCP_ variable may change an answer, and turns the early path off.
FASTMCP_ENV_DEFAULTS = {
    "FASTMCP_CHECK_FOR_UPDATES": "off",
    "FASTMCP_SHOW_SERVER_BANNER": "false",
    "FASTMCP_ENV_FILE": os.devnull,
    "FASTMCP_MASK_ERROR_DETAILS": "true",
    "FASTMCP_ENABLE_RICH_LOGGING": "false",
}
# Set to "off" to have every message wait for the real server.
SWITCH = "FILEGATE_EARLY_ANSWERS"
READ_CHUNK = 1 << 16
# A partial line longer than this is no opening message: stop reading, the real server will.
MAX_PENDING = 1 << 20
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class _Settings(Protocol):
    @property
    def transport(self) -> str: ...
    @property
    def read_only(self) -> bool: ...


def profile(settings: _Settings) -> str:
    """The one thing in the settings that changes an early answer: the tool set."""
    return "read-only" if settings.read_only else "read-write"


def _same(value: Any, accepted: Any) -> bool:
    # Compared as JSON text: in Python True == 1, on the wire (and to pydantic) not quite.
    return json.dumps(value, sort_keys=True) == json.dumps(accepted, sort_keys=True)


def _client_info_ok(info: Any) -> bool:
    return (
        isinstance(info, dict)
        and {"name", "version"} <= info.keys() <= {"name", "version", "title"}
        and all(isinstance(v, str) for v in info.values())
    )


def _capabilities_ok(caps: Any) -> bool:
    return isinstance(caps, dict) and all(
        name in ACCEPTED_CAPABILITIES and any(_same(v, a) for a in ACCEPTED_CAPABILITIES[name])
        for name, v in caps.items()
    )


def _stateless_params_ok(params: Any) -> bool:
    if not isinstance(params, dict) or params.keys() != {"_meta"}:
        return False
    meta = params["_meta"]
    required = {META_PROTOCOL, META_CLIENT_INFO, META_CAPABILITIES}
    return (
        isinstance(meta, dict)
        and required <= meta.keys() <= required | {META_LOG_LEVEL}
        and _same(meta[META_PROTOCOL], STATELESS_PROTOCOL)
        and _client_info_ok(meta[META_CLIENT_INFO])
        and _capabilities_ok(meta[META_CAPABILITIES])
        and (META_LOG_LEVEL not in meta or meta[META_LOG_LEVEL] in LOG_LEVELS)
    )


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate key")
    return dict(pairs)


def parse(line: bytes) -> dict[str, Any] | None:
    """A JSON-RPC request or notification of the plainest shape, else None."""
    try:
        text = line.decode("utf-8")
        if _SURROGATE_ESCAPE.search(text):
            return None  # the SDK refuses a lone surrogate; let it answer
        message = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except ValueError:
        return None
    if not (
        isinstance(message, dict)
        and {"jsonrpc", "method"} <= message.keys() <= {"jsonrpc", "id", "method", "params"}
        and _same(message["jsonrpc"], "2.0")
        and isinstance(message["method"], str)
    ):
        return None
    if "id" in message:
        rid = message["id"]
        plain_int = type(rid) is int and abs(rid) < 2**53
        if not (plain_int or isinstance(rid, str)):
            return None
    return message


class Opening:
    """Which messages of a client's opening have an answer known in advance, and which."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self._answers = answers
        self.era: str | None = None  # "handshake" or "stateless" once a message said so
        self._protocol = ""
        self._initialized = False

    def answer(self, message: dict[str, Any]) -> Any | None:
        """The result for request ``message``, or None: it must wait for the real server."""
        method, params = message["method"], message.get("params")
        if method == "initialize" and self.era is None:
            if not (isinstance(params, dict) and params.keys() == _INITIALIZE_KEYS):
                return None
            version = params["protocolVersion"]
            if not (
                isinstance(version, str)
                and version in HANDSHAKE_PROTOCOLS
                and _client_info_ok(params["clientInfo"])
                and _capabilities_ok(params["capabilities"])
            ):
                return None
            self.era, self._protocol = "handshake", version
            return self._answers["initialize"][version]
        if method == "tools/list" and self.era == "handshake":
            if self._initialized and ("params" not in message or params == {}):
                return self._answers["tools/list"][self._protocol]
            return None
        if method in ("server/discover", "tools/list") and self.era in (None, "stateless"):
            if not _stateless_params_ok(params):
                return None
            self.era = "stateless"
            return self._answers[method][STATELESS_PROTOCOL]
        return None

    def notified(self, message: dict[str, Any]) -> bool:
        """Whether notification ``message`` leaves the answers known (else stop answering)."""
        if (
            message["method"] == "notifications/initialized"
            and self.era == "handshake"
            and message.get("params", {}) == {}
            and not self._initialized
        ):
            self._initialized = True
            return True
        return False


_INITIALIZE_KEYS = {"protocolVersion", "capabilities", "clientInfo"}


class _Writer(Protocol):
    async def write(self, text: str) -> None: ...
    async def flush(self) -> None: ...


@dataclass(frozen=True)
class HeldBack:
    """A request answered early and replayed to the real server: its reply is checked."""

    method: str
    era: str
    result: Any


@dataclass
class Handover:
    """What the real server takes over: bytes read and not answered, replies to hold back."""

    pending: bytes
    answered: list[str]
    # private id of a replayed request → what the early answer was
    held_back: dict[str, HeldBack] = field(default_factory=dict)
    # where a mismatch is recorded, so later starts with the same data do not answer early
    mismatch_marker: Path | None = None

    def writer(self, writer: _Writer) -> _Writer:
        return _HoldingBack(writer, self) if self.held_back else writer


# Sent when an early tools/list turns out not to be the real one: the handshake era's
# capabilities say tools.listChanged, so the client lists the tools again.
_TOOLS_CHANGED = '{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'


class _HoldingBack:
    """The SDK's stdout, less the replies to requests replayed to the real server.

    Each such reply is compared with the early answer. They are made equal by a test
    (tests/server/test_early_answers.py); should they differ all the same (a source changed
    and early_answers.json was not made again), it is said on stderr, a handshake-era client
    is told to list the tools again, and later starts with this data do not answer early.
    """

    def __init__(self, writer: _Writer, handover: Handover) -> None:
        self._writer, self._handover = writer, handover
        self._held_back = handover.held_back

    async def write(self, text: str) -> None:
        if self._held_back and any(rid in text for rid in self._held_back):
            message = json.loads(text)
            rid = message.get("id") if isinstance(message, dict) else None
            if isinstance(rid, str) and rid in self._held_back:
                early = self._held_back.pop(rid)
                if "result" not in message:
                    # Cancelled as stdin closed (the SDK's "Connection closed"), or the like:
                    # nothing to compare with.
                    log.debug("no result to compare with the early %s: %s", early.method, text[:200])
                elif message["result"] != early.result:
                    await self._differed(early, message)
                return
        await self._writer.write(text)

    async def _differed(self, early: HeldBack, message: dict[str, Any]) -> None:
        log.error(
            "the early answer to %s was not fastmcp's (%s): early_answers.json is out of date "
            "(python -m filegate.server.early_data makes it); %s",
            early.method,
            json.dumps(message["result"])[:200],
            "the client is told to list the tools again"
            if early.method == "tools/list" and early.era == "handshake"
            else "restart the client",
        )
        if early.method == "tools/list" and early.era == "handshake":
            await self._writer.write(_TOOLS_CHANGED)
        marker = self._handover.mismatch_marker
        if marker is not None:
            try:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.touch()
            except OSError as exc:
                log.debug("could not record the mismatch at %s: %s", marker, exc)

    async def flush(self) -> None:
        await self._writer.flush()


class EarlySession:
    """A thread answering the opening on ``fd_in``/``fd_out`` until :meth:`hand_over`."""

    def __init__(self, answers: dict[str, Any], fd_in: int = 0, fd_out: int = 1) -> None:
        self._opening = Opening(answers)
        self._fd_in, self._fd_out = fd_in, fd_out
        self._wake_r, self._wake_w = os.pipe()
        self._buf = bytearray()
        self._replay: list[bytes] = []
        self._held_back: dict[str, HeldBack] = {}
        self.mismatch_marker: Path | None = None
        self._answered: list[str] = []
        self._answering = True
        self._tag = f"filegate-early-{secrets.token_hex(8)}-"
        self._thread = threading.Thread(target=self._serve, name="filegate-early", daemon=True)

    def start(self) -> EarlySession:
        self._thread.start()
        return self

    def hand_over(self) -> Handover:
        """Stop answering; what was read and not answered, for the real server."""
        os.write(self._wake_w, b"!")
        self._thread.join()
        os.close(self._wake_r)
        os.close(self._wake_w)
        pending = b"".join(line + b"\n" for line in self._replay) + bytes(self._buf)
        if self._answered:
            log.debug(
                "answered before fastmcp was loaded: %s; %d line(s) handed over",
                ", ".join(self._answered),
                pending.count(b"\n"),
            )
        return Handover(pending, self._answered, self._held_back, self.mismatch_marker)

    def _serve(self) -> None:
        try:
            self._read_until_woken()
        except OSError as exc:  # stdin or stdout gone: the real server will see it too
            log.debug("early answers stopped: %s", exc)

    def _read_until_woken(self) -> None:
        poller = select.poll()
        poller.register(self._fd_in, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        while self._answering:
            ready = {fd for fd, _ in poller.poll()}
            if self._wake_r in ready:
                return
            try:
                data = os.read(self._fd_in, READ_CHUNK)
            except (BlockingIOError, InterruptedError):
                continue
            if not data:
                return  # end of input: the real reader will find it again
            self._buf += data
            while self._answering and b"\n" in self._buf:
                cut = self._buf.index(b"\n")
                line = bytes(self._buf[:cut])
                if self._take(line):
                    del self._buf[: cut + 1]
                else:
                    self._answering = False  # this line and the rest: the real server's
            if len(self._buf) > MAX_PENDING:
                return

    def _take(self, line: bytes) -> bool:
        """Answer or pass ``line`` (True), or leave it to the real server (False)."""
        message = parse(line)
        if message is None:
            return False
        if "id" not in message:
            if not self._opening.notified(message):
                return False
            self._replay.append(line)
            return True
        result = self._opening.answer(message)
        if result is None:
            return False
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        self._send(json.dumps(reply, ensure_ascii=False, separators=(",", ":")) + "\n")
        self._answered.append(message["method"])
        # Replayed: an initialize so that the real server holds the session, and every
        # answer so that the real server's own is compared with it.
        private = f"{self._tag}{len(self._held_back)}"
        self._held_back[private] = HeldBack(message["method"], self._opening.era or "", result)
        self._replay.append(json.dumps({**message, "id": private}).encode("utf-8"))
        return True

    def _send(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            try:
                n = os.write(self._fd_out, data)
            except BlockingIOError:
                select.select([], [self._fd_out], [])
                continue
            data = data[n:]


def _pipe_or_socket(fd: int) -> os.stat_result | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode) else None


def fds_suit() -> bool:
    """Whether fds 0 and 1 are pipes or sockets, and not one socket for both directions (which
    two parties would read at once): the conditions under which server/stdio.py serves them
    itself (its ``usable``, which uses this)."""
    if os.name != "posix":
        return False
    st_in, st_out = _pipe_or_socket(0), _pipe_or_socket(1)
    return (
        st_in is not None
        and st_out is not None
        and (st_in.st_dev, st_in.st_ino) != (st_out.st_dev, st_out.st_ino)
    )


def _environment_suits() -> bool:
    if os.environ.get(SWITCH, "").lower() == "off":
        return False
    return all(FASTMCP_ENV_DEFAULTS.get(k) == v for k, v in os.environ.items() if k.startswith("FASTMCP_"))


def _installed(name: str, version: str) -> bool:
    dist = f"{name}-{version}.dist-info"
    return any(os.path.isdir(os.path.join(p or ".", dist)) for p in sys.path)


def mismatch_marker(data: bytes) -> Path:
    """Where a mismatch with this very data file is recorded (beside filegate's write records)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base, "filegate", f"early-answers-differed-{hashlib.sha256(data).hexdigest()[:16]}")


def load_answers(settings: _Settings) -> tuple[dict[str, Any], Path] | None:
    """The answers for these settings, if made for the installed versions and never found
    to differ from the real server's; with where to record that they did."""
    from filegate import __version__

    try:
        raw = DATA.read_bytes()
        data = json.loads(raw)
    except (OSError, ValueError):
        return None
    marker = mismatch_marker(raw)
    if marker.exists():
        return None
    versions = data.get("versions", {})
    if versions.get("filegate") != __version__ or not all(
        _installed(name, str(versions.get(name))) for name in PINNED
    ):
        return None
    answers: dict[str, Any] | None = data.get("profiles", {}).get(profile(settings))
    return (answers, marker) if answers is not None else None


def start(settings: _Settings) -> EarlySession | None:
    """Start answering the opening on stdio, when the settings and the environment allow."""
    if settings.transport != "stdio" or not fds_suit() or not _environment_suits():
        return None
    loaded = load_answers(settings)
    if loaded is None:
        return None
    answers, marker = loaded
    session = EarlySession(answers)
    session.mismatch_marker = marker
    return session.start()
