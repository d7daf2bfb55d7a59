"""A writer killed with SIGKILL at random moments leaves the old file or the new one, never a mix.

The writer is a real process running filegate's atomic writer (``replace_file``) in a loop,
switching the file between two contents of different sizes. Each round starts a writer, waits
until it has completed a write, kills it at a random instant, and checks the file on disk.

The writer marks in a one-byte flag file whether it is inside ``replace_file`` when the kill
lands, so the test proves that kills did land mid-write (a test whose kills all fell between
writes would pass a writer that truncates in place). The ``named`` variant takes O_TMPFILE
away from the writer (a simulation of a system without it, such as macOS), so dead writers
leave named temps behind and the start-up sweep has something to remove.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from filegate.fsio.pending import TEMP_SUFFIX, sweep_pending_temps

# Two contents of different sizes, so a torn or truncated file cannot pass for either.
CONTENT_A = b"".join(b"A line %06d of the old content\r\n" % i for i in range(8_000))  # ~270 KB
CONTENT_B = b"".join(b"B %06d\n" % i for i in range(120_000))  # ~1 MB

WRITER = r"""
import hashlib, os, sys
from pathlib import Path
import filegate.fsio.atomic as atomic
from filegate.fsio.atomic import replace_file
from filegate.fsio.snapshot import Snapshot
path, a, b = Path(sys.argv[1]), Path(sys.argv[2]).read_bytes(), Path(sys.argv[3]).read_bytes()
flag = os.open(sys.argv[4], os.O_WRONLY)
if sys.argv[5] == "named":
    atomic._TMPFILE = 0  # simulation: a system without O_TMPFILE
i = 0
while True:
    data = path.read_bytes()
    expect = Snapshot.of(data, os.stat(path))
    os.pwrite(flag, b"1", 0)
    replace_file(path, a if i % 2 else b, expect=expect, shown=path.name)
    os.pwrite(flag, b"0", 0)
    if i == 0:
        sys.stdout.write("ready\n")
        sys.stdout.flush()
    i += 1
"""


def kill_loop(tmp_path: Path, kills: int, seed: int, temps_kind: str = "tmpfile") -> dict[str, int]:
    """Run ``kills`` rounds; return what was found on disk after them."""
    rng = random.Random(seed)
    target = tmp_path / "target.txt"
    target.write_bytes(CONTENT_A)
    target.chmod(0o640)
    (tmp_path / "a.bin").write_bytes(CONTENT_A)
    (tmp_path / "b.bin").write_bytes(CONTENT_B)
    flag = tmp_path / "in-write.flag"
    flag.write_bytes(b"0")
    seen = {"old": 0, "new": 0, "mid_write": 0, "temps_left": 0}
    for _ in range(kills):
        proc = subprocess.Popen(
            [
                sys.executable, "-c", WRITER, str(target), str(tmp_path / "a.bin"), str(tmp_path / "b.bin"),
                str(flag), temps_kind,
            ],
            stdout=subprocess.PIPE,
        )  # fmt: skip
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
        seen["mid_write"] += flag.read_bytes() == b"1"
    seen["temps_left"] = temps(tmp_path)
    # what the next start does: remove the temps that dead writers recorded
    sweep_pending_temps()
    seen["temps_after_sweep"] = temps(tmp_path)
    return seen


def temps(directory: Path) -> int:
    return sum(1 for p in directory.iterdir() if p.name.endswith(TEMP_SUFFIX))


def check_provoked(seen: dict[str, int], kills: int, temps_kind: str) -> None:
    """The kills did what the test is about: they landed mid-write, both contents were left."""
    assert seen["mid_write"] >= kills // 4, f"too few kills landed inside a write: {seen}"
    assert seen["old"] >= 1 and seen["new"] >= 1, f"only one outcome seen: {seen}"
    if temps_kind == "named":
        assert seen["temps_left"] >= 1, f"no dead writer left a named temp to sweep: {seen}"
    assert seen["temps_after_sweep"] == 0


@pytest.mark.parametrize("temps_kind", ["tmpfile", "named"])
@pytest.mark.slow
def test_killed_writer_leaves_old_or_new_content(tmp_path: Path, temps_kind: str) -> None:
    seen = kill_loop(tmp_path, kills=20, seed=1, temps_kind=temps_kind)
    check_provoked(seen, 20, temps_kind)


@pytest.mark.slow
@pytest.mark.parametrize("temps_kind", ["tmpfile", "named"])
def test_killed_writer_leaves_old_or_new_content_over_hundreds_of_kills(
    tmp_path: Path, temps_kind: str
) -> None:
    seen = kill_loop(tmp_path, kills=250, seed=2, temps_kind=temps_kind)
    print(f"\ncrash loop ({temps_kind}): {seen}")
    check_provoked(seen, 250, temps_kind)
