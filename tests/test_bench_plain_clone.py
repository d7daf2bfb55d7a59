"""bench/run.py from a plain clone (no ../shared beside it): it says in one line what it needs
for the items it cannot run, instead of crashing on a missing script."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_items_that_need_the_shared_tools_are_named_in_one_line(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    shutil.copytree(REPO / "bench", clone / "bench", ignore=shutil.ignore_patterns("__pycache__"))
    done = subprocess.run([sys.executable, "bench/run.py", "--only", "grep-fwm", "--only", "cold-start"],
                          cwd=clone, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 2 and done.stdout == "", done
    assert done.stderr == (
        "bench: not run: grep-fwm, cold-start: they need corpus, reference-server from "
        f"{tmp_path}/shared/tools (the project's shared tools beside this clone), which is not there\n"
    )
