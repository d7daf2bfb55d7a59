"""A writer killed with SIGKILL at random moments leaves the old file or the new one, never a mix.

The writer is a real process running filegate's atomic writer (``replace_file``) in a loop,
switching the file between two contents of different sizes. Each round starts a writer, waits
until it has completed a write, kills it at a random instant, and checks the file on disk.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from filegate.fsio.atomic import TEMP_SUFFIX, sweep_pending_temps

# Two contents of different sizes, so a torn or truncated file cannot pass for either.
CONTENT_A = b"".join(b"A line %06d of the old content\r\n" % i for i in range(8_000))  # ~270 KB
CONTENT_B = b"".join(b"B %06d\n" % i for i in range(120_000))  # ~1 MB

WRITER = r"""
import hashlib, os, sys
from pathlib import Path
from filegate.fsio.atomic import Snapshot, replace_file
path, a, b = Path(sys.argv[1]), Path(sys.argv[2]).read_bytes(), Path(sys.argv[3]).read_bytes()
i = 0
while True:
    data = path.read_bytes()
    expect = Snapshot.of(data, os.stat(path))
    replace_file(path, a if i % 2 else b, expect=expect, shown=path.name)
    if i == 0:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
    i += 1
"""


def kill_loop(tmp_path: Path, kills: int, seed: int) -> dict[str, int]:
    """Run ``kills`` rounds; return what was found on disk after them."""
    rng = random.Random(seed)
    target = tmp_path / "target.txt"
    target.write_bytes(CONTENT_A)
    target.chmod(0o640)
    (tmp_path / "a.bin").write_bytes(CONTENT_A)
    (tmp_path / "b.bin").write_bytes(CONTENT_B)
    seen = {"old": 0, "new": 0, "temps_left": 0}
    for _ in range(kills):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), str(tmp_path / "a.bin"), str(tmp_path / "b.bin")],
            stdout=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"ready\n"
        time.sleep(rng.uniform(0, 0.03))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stdout.close()
        data = target.read_bytes()
        assert data in (CONTENT_A, CONTENT_B), f"torn file: {len(data)} bytes"
        assert target.stat().st_mode & 0o777 == 0o640
        seen["old" if data == CONTENT_A else "new"] += 1
    seen["temps_left"] = temps(tmp_path)
    # what the next start does: remove the temps that dead writers recorded
    sweep_pending_temps()
    seen["temps_after_sweep"] = temps(tmp_path)
    return seen


def temps(directory: Path) -> int:
    return sum(1 for p in directory.iterdir() if p.name.endswith(TEMP_SUFFIX))


def test_killed_writer_leaves_old_or_new_content(tmp_path: Path) -> None:
    seen = kill_loop(tmp_path, kills=20, seed=1)
    assert seen["old"] + seen["new"] == 20
    assert seen["temps_after_sweep"] == 0


@pytest.mark.slow
def test_killed_writer_leaves_old_or_new_content_over_hundreds_of_kills(tmp_path: Path) -> None:
    seen = kill_loop(tmp_path, kills=250, seed=2)
    print(f"\ncrash loop: {seen}")
    assert seen["old"] + seen["new"] == 250
    assert seen["temps_after_sweep"] == 0
