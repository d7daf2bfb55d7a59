"""media/worker.py's limits where the server itself runs under lower ones (``ulimit -t``,
systemd's ``LimitCPU=``, a test harness): the worker keeps the lower limit instead of failing to
raise it (a process cannot raise its hard limit)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests import pdf_factory as pf

pytest.importorskip("pypdfium2")

SERVER_UNDER_A_CPU_LIMIT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_CPU, (20, 20))  # below the worker's 30 s (DECODE_TIMEOUT_S)
from filegate.media.pdf_pages import render_pages
with open(sys.argv[1], "rb") as f:
    print(render_pages(f.fileno(), 1, 1, 1 << 20, 200).pages[0].out_width)
"""


@pytest.mark.skipif(sys.platform == "win32", reason="no rlimits on Windows")
def test_a_worker_started_under_a_lower_cpu_limit_keeps_it_and_decodes(tmp_path: Path) -> None:
    path = tmp_path / "page.pdf"
    path.write_bytes(pf.left_half_black((100, 100)))
    done = subprocess.run(
        [sys.executable, "-c", SERVER_UNDER_A_CPU_LIMIT, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "200"), done.stderr[-2000:]
