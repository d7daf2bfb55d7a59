"""rg must never wait on a FIFO (issue 22 item 8).

rg lists a directory and searches the entries the listing says are regular files: a FIFO,
socket or device met in the walk is skipped. But a local process can swap a listed file for
a FIFO between the listing and rg's open(); rg then blocks in open() until a writer comes, or,
if the swapper holds a writer open, in read() for ever — and every Grep took the whole 20 s
timeout. No rg flag opens with O_NONBLOCK or refuses non-regular files at open, and Landlock
cannot tell a FIFO from a file. So filegate watches rg instead: every WATCH_EVERY_S it reads
the kernel's wait channel of each of rg's threads (``/proc/<pid>/task/<tid>/wchan``, no
ptrace needed), and a thread asleep in a FIFO's open or read stops the search at once. The
cost is a few small /proc reads per 100 ms of a search that lasts that long (none before).
Where there is no /proc (macOS), nothing is watched and the timeout still bounds the wait.
"""

from __future__ import annotations

import os

# Where a thread sleeps waiting on a FIFO: its open (for a writer) or its read (for data),
# across kernel versions. rg reads no pipe of its own (its stdin is not read for a directory
# search; its stdout is written, never read), so a read that waits is a FIFO from the tree.
FIFO_WAITS = frozenset({"wait_for_partner", "fifo_open", "pipe_read", "anon_pipe_read", "pipe_read_wait"})

WATCH_FROM_S = 0.1  # a search that ends sooner is never looked at
WATCH_EVERY_S = 0.1

_SYS_READ = {"x86_64": 0, "aarch64": 63, "riscv64": 63}


def fifo_waiter(pid: int) -> str | None:
    """The FIFO one of ``pid``'s threads is waiting on ("" when it cannot be named), or None
    when no thread waits on one (or /proc cannot tell)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        try:
            with open(f"{base}/wchan") as f:
                wchan = f.read().strip()
        except OSError:
            continue
        if wchan in FIFO_WAITS:
            return _waited_on(pid, base)
    return None


def _waited_on(pid: int, base: str) -> str:
    """The FIFO's path when the thread waits in read() (its fd names it), else ""."""
    try:
        with open(f"{base}/syscall") as f:
            fields = f.read().split()
        if len(fields) > 1 and int(fields[0]) == _SYS_READ.get(os.uname().machine, -1):
            return os.readlink(f"/proc/{pid}/fd/{int(fields[1], 16)}")
    except (OSError, ValueError):
        pass
    return ""
