"""``filegate`` under cProfile, switched on by SIGUSR1 and written to OUT by SIGUSR2
(bench/percall.py --profile): the timed calls only, not the start.

    python bench/profiled_server.py OUT [filegate's flags ...]
"""

from __future__ import annotations

import cProfile
import signal
import sys
from typing import Any

from filegate.cli import main

out = sys.argv[1]
profiler = cProfile.Profile()


def stop(*_: Any) -> None:
    profiler.disable()
    profiler.dump_stats(out)


signal.signal(signal.SIGUSR1, lambda *_: profiler.enable())
signal.signal(signal.SIGUSR2, stop)
sys.exit(main(sys.argv[2:]))
