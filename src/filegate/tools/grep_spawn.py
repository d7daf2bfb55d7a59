"""rg started from a thread inside its Landlock sandbox (grep_sandbox.Sandbox.run_inside), as
an anyio ``Process``: asyncio starts children from the event loop's thread only, so this one is
a ``subprocess.Popen`` awaited by its pidfd, with its pipes read without a thread."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from filegate.tools import grep_sandbox


class _PipeStream(ByteReceiveStream):
    """The read end of a child's pipe, non-blocking, read when the loop sees data."""

    def __init__(self, fd: int) -> None:
        os.set_blocking(fd, False)
        self.fd = fd

    async def receive(self, max_bytes: int = 65536) -> bytes:
        while True:
            try:
                data = os.read(self.fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)
                continue
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        if self.fd >= 0:
            anyio.notify_closing(self.fd)
            os.close(self.fd)
            self.fd = -1


class Confined(Process):
    """A child started by :func:`start`; waited for through its pidfd, never by a thread."""

    def __init__(self, popen: subprocess.Popen[bytes], stdout: int | None, stderr: int | None) -> None:
        self.popen = popen
        self.pidfd = os.pidfd_open(popen.pid)
        self._stdout = _PipeStream(stdout) if stdout is not None else None
        self._stderr = _PipeStream(stderr) if stderr is not None else None

    async def wait(self) -> int:
        while self.popen.poll() is None:
            await anyio.wait_readable(self.pidfd)  # readable once the child has exited
        return self.popen.returncode

    def terminate(self) -> None:
        self.popen.terminate()

    def kill(self) -> None:
        self.popen.kill()  # Popen checks first that the child is not reaped (no reused pid)

    def send_signal(self, sig: signal.Signals) -> None:
        self.popen.send_signal(sig)

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    @property
    def stdin(self) -> ByteSendStream | None:
        return None

    @property
    def stdout(self) -> ByteReceiveStream | None:
        return self._stdout

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return self._stderr

    async def aclose(self) -> None:
        """The pipes closed, the child waited for (the caller kills it first if it must)."""
        for stream in (self._stdout, self._stderr):
            if stream is not None:
                await stream.aclose()
        try:
            await self.wait()
        finally:
            if self.pidfd >= 0:
                anyio.notify_closing(self.pidfd)
                os.close(self.pidfd)
                self.pidfd = -1


def start(
    sandbox: grep_sandbox.Sandbox,
    cmd: Sequence[str],
    cwd: str,
    stdin: int | None,
    stdout: int,
    pass_fds: Sequence[int],
) -> Confined:
    """``cmd`` started inside ``sandbox`` (stdout: an fd, or ``subprocess.PIPE``; stderr a pipe
    of its own). OSError if it cannot start; grep_sandbox.Refused if the kernel refuses the
    sandbox (nothing started then)."""
    err_r, err_w = os.pipe()
    out_r, out_w = os.pipe() if stdout == subprocess.PIPE else (None, stdout)
    try:

        def spawn() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                list(cmd),
                cwd=cwd,
                stdin=stdin,
                stdout=out_w,
                stderr=err_w,
                start_new_session=True,
                pass_fds=tuple(pass_fds),
            )

        popen = sandbox.run_inside(spawn)
    except BaseException:
        os.close(err_r)
        if out_r is not None:
            os.close(out_r)
        raise
    finally:
        os.close(err_w)
        if out_r is not None:
            os.close(out_w)
    return Confined(popen, out_r, err_r)
