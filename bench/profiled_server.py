"""``filegate`` under cProfile (the main thread's CPU time), switched on by SIGUSR1 and written
to OUT by SIGUSR2 (bench/percall.py --profile): the timed calls only, not the start.

    python bench/profiled_server.py OUT [filegate's flags ...]
"""

from __future__ import annotations

import cProfile
import signal
import sys
import time
from typing import Any

from filegate.cli import main

out = sys.argv[1]
# CPU of the main thread, not wall time: under load a blocking call's wall time (a pipe write,
# waking the worker thread) is mostly waiting for a core, which is not the server's work.
profiler = cProfile.Profile(time.thread_time)


def stop(*_: Any) -> None:
    profiler.disable()
    profiler.dump_stats(out)


signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
signal.signal(signal.SIGUSR2, stop)
sys.exit(main(sys.argv[2:]))
