"""stdio on the event loop's own file descriptors: no worker-thread round trip per message.

The MCP SDK's stdio transport (mcp/server/stdio.py) wraps stdin and stdout with
``anyio.wrap_file``: every line read, and every message written (a write and a flush), is a
hop to a worker thread and back. Under load that was half of a FastMCP server's samples
(FASTMCP-4-NOTES §10). Here stdin and stdout are made non-blocking and served by the asyncio
selector (``add_reader`` / ``add_writer``); JSON-RPC framing and parsing stay the SDK's own
(``stdio_server`` with explicit streams).

As the SDK does, fds 0 and 1 are diverted while serving (0 reads /dev/null, 1 writes to
stderr), so children (rg, wc) and stray prints never touch the wire; both are restored, and
made blocking again, on the way out.

:func:`run_stdio` is the stdio entry point: it serves until stdin closes, and on SIGTERM/SIGINT
drains running calls (server/shutdown.py's CallGate) before dying of that signal.

The SDK transport is used instead when stdin and stdout are not pipes or sockets (a terminal,
a regular file), when they are one and the same socket, off asyncio, or off POSIX.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

import anyio

from filegate.fsio import platform
from filegate.server import upstream
from filegate.server.shutdown import CANCEL_WAIT_S, SIGNALS, CallGate, run_exit_handlers

if TYPE_CHECKING:
    from fastmcp import FastMCP


log = logging.getLogger("filegate")

# One read(2) takes at most this much; a message longer than this arrives over several reads.
READ_CHUNK = 1 << 16
# Stop reading stdin while this many complete lines wait to be parsed (a client sending
# faster than the server parses); resume below LINES_LOW. Bounds memory like a pipe buffer.
LINES_HIGH, LINES_LOW = 64, 16
# On the way out, how long the last replies may take to drain into a slow client's pipe.
FINAL_FLUSH_S = 5.0


class _LineReader:
    """The lines of a non-blocking fd, read whenever the event loop says it is readable."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self._fd, self._loop = fd, loop
        self._buf = bytearray()
        self._lines: deque[bytes] = deque()
        self._eof = False
        self._reading = False
        self._waiter: asyncio.Future[None] | None = None
        self._resume()

    def _resume(self) -> None:
        if not self._reading and not self._eof:
            self._loop.add_reader(self._fd, self._on_readable)
            self._reading = True

    def _pause(self) -> None:
        if self._reading:
            self._loop.remove_reader(self._fd)
            self._reading = False

    def _on_readable(self) -> None:
        try:
            data = os.read(self._fd, READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:  # ECONNRESET and friends: the client is gone
            log.debug("stdin read failed: %s", exc)
            data = b""
        if not data:
            self._eof = True
            self._pause()
        else:
            start = len(self._buf)
            self._buf += data
            if b"\n" in data:
                cut = self._buf.rindex(b"\n", start) + 1
                self._lines.extend(bytes(self._buf[:cut]).split(b"\n")[:-1])
                del self._buf[:cut]
                if len(self._lines) >= LINES_HIGH:
                    self._pause()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        while not self._lines:
            if self._eof:
                if self._buf:  # a last line without its line break
                    rest = bytes(self._buf)
                    self._buf.clear()
                    return rest.decode("utf-8", errors="replace")
                raise StopAsyncIteration
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        line = self._lines.popleft()
        if len(self._lines) <= LINES_LOW:
            self._resume()
        # What the SDK's text wrapper yields: UTF-8 with replacement, the line break kept.
        return line.decode("utf-8", errors="replace") + "\n"

    def close(self) -> None:
        """Read no more: whoever waits for a line sees stdin's end."""
        self._eof = True
        self._pause()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


class _Writer:
    """write() buffers, flush() writes it all out, waiting on the selector when the pipe is full."""

    def __init__(self, fd: int, loop: asyncio.AbstractEventLoop) -> None:
        self._fd, self._loop = fd, loop
        self._buf = bytearray()
        # The SDK's writer task and the final flush on the way out: one waits on the selector
        # at a time (a second add_writer on the fd would replace the first one's wake-up).
        self._flushing = asyncio.Lock()

    async def write(self, text: str) -> None:
        self._buf += text.encode("utf-8")

    async def flush(self) -> None:
        if not self._buf:
            return
        async with self._flushing:
            await self._drain()

    async def _drain(self) -> None:
        while self._buf:
            try:
                n = os.write(self._fd, self._buf)
            except (BlockingIOError, InterruptedError):
                await self._writable()
                continue
            del self._buf[:n]

    async def _writable(self) -> None:
        ready: asyncio.Future[None] = self._loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        self._loop.add_writer(self._fd, wake)
        try:
            await ready
        finally:
            self._loop.remove_writer(self._fd)


# pydantic's JSON parser refuses an escaped lone UTF-16 surrogate ("\\ud800"), which Python's
# json (and JSON itself) allow; the SDK then drops the request without a reply and the client
# waits for ever. Only lines that hold such an escape are looked at twice.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _reply_to_unparseable(line: str) -> str | None:
    """A JSON-RPC error for a request the SDK cannot parse only because of a lone surrogate."""
    if not _SURROGATE_ESCAPE.search(line):
        return None
    from mcp import types

    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None  # a valid pair (an escaped emoji): the SDK takes it
    except ValueError:
        pass
    try:
        message = json.loads(line)
    except ValueError:
        return None  # not JSON at all: the SDK's own handling
    if not isinstance(message, dict) or "id" not in message or "method" not in message:
        return None
    error = {
        "code": -32602,
        "message": "Invalid params: the request holds a lone UTF-16 surrogate (an escape such as "
        "\\ud800 with no partner), which no file name or text can hold.",
    }
    return json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + "\n"


class _AnsweringUnparseable:
    """The lines for the SDK, less the requests it would drop unanswered (answered here)."""

    def __init__(self, lines: _LineReader, writer: _Writer) -> None:
        self._lines, self._writer = lines, writer

    def __aiter__(self) -> _AnsweringUnparseable:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._lines.__anext__()
            reply = _reply_to_unparseable(line)
            if reply is None:
                return line
            await self._writer.write(reply)
            await self._writer.flush()


def _pipe_or_socket(fd: int) -> os.stat_result | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return st if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode) else None


def fds_suit() -> bool:
    """Whether fds 0 and 1 are pipes or sockets, and not one socket for both directions (which
    two parties would read at once)."""
    if os.name != "posix":
        return False
    st_in, st_out = _pipe_or_socket(0), _pipe_or_socket(1)
    return (
        st_in is not None
        and st_out is not None
        and (st_in.st_dev, st_in.st_ino) != (st_out.st_dev, st_out.st_ino)
    )


def usable() -> bool:
    """Whether stdin/stdout suit this transport (else the SDK's threaded one is used)."""
    if os.name != "posix":
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # not on asyncio (trio)
        return False
    return fds_suit()


@contextlib.contextmanager
def _claimed(fd: int, divert: Callable[[], int]) -> Any:
    """A private, non-blocking duplicate of ``fd`` while ``fd`` itself points at ``divert()``."""
    import fcntl

    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        other = divert()
        try:
            os.dup2(other, fd)
        finally:
            os.close(other)
        os.set_blocking(private, False)
        try:
            yield private
        finally:
            with contextlib.suppress(OSError):
                os.set_blocking(private, True)  # the description is shared with fd's old owners
            os.dup2(private, fd)
    finally:
        os.close(private)


def _devnull_for_reading() -> int:
    return os.open(os.devnull, os.O_RDONLY)


def _stderr_for_writing() -> int:
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)


@contextlib.asynccontextmanager
async def stdio_streams(enders: list[Callable[[], None]] | None = None) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's (read_stream, write_stream) pair over stdin/stdout, without worker threads.
    On the event loop's own fds, a function that ends stdin's reading is added to ``enders``
    (the SDK's threaded reader cannot be ended that way)."""
    from mcp.server.stdio import stdio_server

    if not usable():
        log.debug("stdio: the SDK's threaded transport (stdin/stdout are not both pipes or sockets)")
        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    log.debug("stdio: served on the event loop's own file descriptors")
    sys.stdout.flush()
    with _claimed(0, _devnull_for_reading) as fd_in, _claimed(1, _stderr_for_writing) as fd_out:
        reader, writer = _LineReader(fd_in, loop), _Writer(fd_out, loop)
        lines = _AnsweringUnparseable(reader, writer)
        if enders is not None:
            enders.append(reader.close)
        try:
            async with stdio_server(stdin=lines, stdout=writer) as streams:  # type: ignore[arg-type]
                yield streams
        finally:
            reader.close()
            # Whatever is left for the client; a client that is gone (EPIPE) gets nothing.
            with anyio.move_on_after(FINAL_FLUSH_S, shield=True), contextlib.suppress(OSError):
                await writer.flush()


async def run_stdio_async(server: FastMCP, enders: list[Callable[[], None]] | None = None) -> None:
    """``FastMCP.run_stdio_async(show_banner=False)`` on :func:`stdio_streams`: every
    ``tools/call`` is answered by fastmcp's own dispatch (SPEC §7, one path per request)."""
    from fastmcp.server.context import reset_transport, set_transport

    token = set_transport("stdio")
    try:
        async with upstream.lifespan(server), stdio_streams(enders) as (read_stream, write_stream):
            low = upstream.low_level(server)
            await low.run(read_stream, write_stream, low.create_initialization_options())
    finally:
        reset_transport(token)


def run_stdio(server: FastMCP) -> None:
    """``server.run("stdio")`` that stops cleanly on SIGTERM/SIGINT.

    On a signal: drain running calls, then end stdin's reading, so the server stops as when
    the client closes stdin (every answer, the cancelled calls' too, written out on the way),
    then die of that same signal (the conventional exit status). With the SDK's threaded
    reader (not pipes or sockets) that cannot be ended: die once the calls are drained.
    """
    gate = CallGate()
    server.add_middleware(gate)
    received: list[int] = []

    async def main() -> None:
        enders: list[Callable[[], None]] = []
        hurry, finished = anyio.Event(), anyio.Event()
        stopping: list[int] = []
        async with anyio.create_task_group() as tg:

            async def stop(signum: int) -> None:
                log.info("received %s, stopping", signal.Signals(signum).name)
                await gate.drain(hurry=hurry)
                if not enders:
                    _die(signum)
                stopping.append(signum)
                for end in enders:
                    end()
                with anyio.move_on_after(FINAL_FLUSH_S + CANCEL_WAIT_S):
                    await finished.wait()
                _die(signum)

            async def watch() -> None:
                try:
                    if not platform.has_loop_signals():
                        raise NotImplementedError  # as add_signal_handler does on Windows
                    with anyio.open_signal_receiver(*SIGNALS) as signals:
                        async for signum in signals:
                            received.append(int(signum))
                            if len(received) == 1:
                                tg.start_soon(stop, int(signum))
                            else:
                                hurry.set()
                except NotImplementedError:
                    # Windows: no signal handlers on the event loop. The client stops the server
                    # by closing stdin; Ctrl+C in a console ends it as a KeyboardInterrupt.
                    log.debug("stdio: no signal handlers on this event loop; stdin's end stops the server")

            tg.start_soon(watch)
            await run_stdio_async(server, enders)  # no worker thread per message
            finished.set()
            if stopping:
                _die(stopping[0])
            tg.cancel_scope.cancel()  # stdin closed: the normal way out

    anyio.run(main)


def _die(signum: int) -> None:
    """Exit as if ``signum`` had not been caught (as PID 1, SIG_DFL is ignored: exit anyway),
    after the exit handlers a normal exit would run."""
    run_exit_handlers()
    logging.shutdown()
    sys.stdout.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    os._exit(128 + signum)
