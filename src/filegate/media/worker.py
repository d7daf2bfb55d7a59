"""The one place an untrusted decoder runs: a child process, ``python -I -m filegate.media.worker``,
under an address-space and CPU limit and a wall-clock timeout (SPEC §4 ReadMediaFile, §8.6).

FFmpeg decodes frames while it opens a container and a PDF's streams inflate and its object
graph grows as it is parsed, so neither decode's memory can be bounded before it runs. Each runs
here instead, with RLIMIT_AS and RLIMIT_CPU set before the decoder is imported: a bomb fails this
process, never the server. The file is this process's stdin (the server's open descriptor); one
JSON request is argv[1]; one JSON answer is written to stdout. The server's side is
:func:`run_worker`, which holds the whole decode gate while the child runs.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from filegate.errors import MediaError

from .bounds import DECODES, Deadline, DecodeTimeout

# glibc reserves 64 MiB of address space per thread arena: two keep a decoder's threads within it.
WORKER_ENV = {"MALLOC_ARENA_MAX": "2", "LC_ALL": "C"}
# The modules whose ``answer_in_worker(source, request)`` the child runs, by a request's "decoder".
DECODER_MODULES = {
    "video": "filegate.media.video",
    "pdf": "filegate.media.pdf",
    "pdfpages": "filegate.media.pdf_pages",
}
# Seconds for the child to start (Python and the decoder's libraries) on top of the work's budget.
WORKER_START_S = 10.0


class WorkerStopped(MediaError):
    """The worker was stopped (limit, timeout or crash): what was refused, in words."""


@dataclass(frozen=True, slots=True)
class Decoder:
    """Who decodes in the worker, for the sentences that say why it was stopped."""

    module: str  # its key in DECODER_MODULES
    doing: str  # "FFmpeg's decode of it": the subject of "ran past …", "was killed …"
    over_memory: str  # the sentence for a decode that needed more than the child's memory


def run_worker(
    fd: int, request: dict[str, Any], timeout: float, address_space: int, decoder: Decoder
) -> dict[str, Any]:
    """Run one request in the worker under its limits, holding the whole decode gate (its
    memory is the process's decode memory, counted at its cap); its JSON answer."""
    deadline = Deadline(timeout)
    mib = address_space >> 20
    request = {
        **request,
        "decoder": decoder.module,
        "address_space": address_space,
        "cpu_seconds": max(1, int(timeout)),
    }
    # -I: no current directory (the workspace) or PYTHON* variable on the child's import path.
    args = [sys.executable, "-I", "-m", "filegate.media.worker", json.dumps(request)]
    with DECODES.hold(DECODES.capacity, deadline):
        try:
            done = subprocess.run(
                args, stdin=fd, capture_output=True, cwd="/", env=WORKER_ENV,
                timeout=max(1.0, deadline.left()) + WORKER_START_S, check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            raise WorkerStopped(
                f"{decoder.doing} ran past the {timeout:g} s this server allows for one file, "
                "so it was stopped (in a separate process)."
            ) from None
    if done.returncode < 0:
        sig = -done.returncode
        if sig == signal.SIGXCPU:
            raise WorkerStopped(
                f"{decoder.doing} used more than the {timeout:g} s of CPU this server allows "
                "for one file, so it was stopped (in a separate process)."
            )
        if sig == signal.SIGKILL:  # the CPU limit's hard stop, or the system's OOM killer
            raise WorkerStopped(
                f"{decoder.doing} was killed (in a separate process): it ran past its CPU "
                f"limit of {timeout:g} s or the system ran out of memory."
            )
        raise WorkerStopped(
            f"{decoder.doing} crashed ({signal.Signals(sig).name}; it may have hit the "
            f"{mib} MiB memory limit of its separate process)."
        )
    try:
        answer: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        answer = {"refused": "memory"} if b"MemoryError" in done.stderr else {}
    if answer.get("refused") == "memory":
        raise WorkerStopped(decoder.over_memory.format(mib=mib))
    if "error" in answer:
        raise (DecodeTimeout if answer.get("timeout") else MediaError)(answer["error"])
    if "answer" not in answer:
        status = done.returncode
        raise WorkerStopped(f"{decoder.doing} failed in its separate process (exit status {status}).")
    result: dict[str, Any] = answer["answer"]
    return result


# --- the child's side -------------------------------------------------------------------------


def _limit(address_space: int, cpu_seconds: int) -> None:
    if sys.platform == "win32":  # no rlimits: the separate process still keeps a bomb out of the server
        return
    import resource

    def within(limit: int, soft: int, hard: int) -> tuple[int, int]:
        # A process cannot raise its hard limit: under a lower one it inherited (the server run
        # with `ulimit -t` or systemd's LimitCPU=), that one stays, never a failed setrlimit.
        inherited = resource.getrlimit(limit)[1]
        if inherited == resource.RLIM_INFINITY:
            return soft, hard
        return min(soft, inherited), min(hard, inherited)

    resource.setrlimit(resource.RLIMIT_AS, within(resource.RLIMIT_AS, address_space, address_space))
    # SIGXCPU at the soft limit ends the process; SIGKILL one second later if it is caught.
    resource.setrlimit(resource.RLIMIT_CPU, within(resource.RLIMIT_CPU, cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    # Imported after the limits: the decoders and their libraries are loaded under them too.
    source = os.fdopen(0, "rb", closefd=False)
    source.seek(0)  # the descriptor's offset is the server's: wherever its last read left it
    try:
        # Found by name, not imported here: each decoder's module imports this one to run it.
        decoder = importlib.import_module(DECODER_MODULES[request["decoder"]])
        return {"answer": decoder.answer_in_worker(source, request)}
    except MemoryError:  # PyAV's av.MemoryError (FFmpeg's ENOMEM) is one too
        return {"refused": "memory"}
    except RecursionError:  # a PDF's object graph nested past Python's stack: refused like memory
        return {"refused": "memory"}
    except DecodeTimeout as exc:
        return {"error": str(exc), "timeout": True}
    except MediaError as exc:
        return {"error": str(exc)}


def main() -> int:
    request = json.loads(sys.argv[1])
    _limit(request["address_space"], request["cpu_seconds"])
    try:
        answer = _answer(request)
    except MemoryError:
        answer = {"refused": "memory"}
    sys.stdout.write(json.dumps(answer))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
