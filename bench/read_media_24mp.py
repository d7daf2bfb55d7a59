"""ReadMediaFile on a 24-megapixel JPEG: time to the fitted image and peak memory.

    .venv/bin/python bench/read_media_24mp.py            # default budget (1 MiB) and Kimi's

Each scenario runs in a fresh interpreter. The baseline is the RSS after the server is built
and a tiny image has been read once (so every lazy import is paid); then the peak-RSS mark
(VmHWM) is reset, and the peak during the first 24 MP read is reported over that baseline
(Linux only: /proc/self/status, /proc/self/clear_refs). Calls go through an
in-memory MCP client, so base64 and the JSON-RPC message are included.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WIDTH, HEIGHT = 6000, 4000  # 24 MP, a typical APS-C camera
RUNS = 5

CHILD = r"""
import asyncio, base64, io, json, statistics, sys, time
from pathlib import Path
from PIL import Image
sys.path.insert(0, sys.argv[1])
from tests.conftest import connect, call

ws, budget = Path(sys.argv[2]), int(sys.argv[3])

def status_mib(key):
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(key)

def reset_peak():
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := current RSS (Linux >= 4.0)

async def main():
    out = {}
    async with connect(ws, "legacy", result_budget=budget) as c:
        await call(c, "ReadMediaFile", path="tiny.png")
        base = status_mib("VmRSS")
        reset_peak()
        times = []
        for i in range(int(sys.argv[4])):
            t = time.perf_counter()
            r = await call(c, "ReadMediaFile", path="photo24.jpg")
            times.append(time.perf_counter() - t)
            if i == 0:
                out["peak_mib"] = status_mib("VmHWM")
        img = next(b for b in r.content if b.type == "image")
        raw = base64.b64decode(img.data)
        out.update(
            baseline_mib=base,
            times_s=times,
            median_s=statistics.median(times),
            returned=f"{Image.open(io.BytesIO(raw)).size} {img.mime_type} {len(raw)} bytes",
            base64_chars=len(img.data),
            result_json_chars=len(json.dumps([b.model_dump(mode='json') for b in r.content])),
        )
    print(json.dumps(out))

asyncio.run(main())
"""


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from PIL import Image

    from tests.media_factory import photo

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        photo(WIDTH, HEIGHT).save(ws / "photo24.jpg", "JPEG", quality=90)
        Image.new("RGB", (8, 8)).save(ws / "tiny.png")
        size = (ws / "photo24.jpg").stat().st_size
        print(f"input: {WIDTH}x{HEIGHT} JPEG, {size} bytes ({size / 2**20:.1f} MiB)")
        for label, budget in (("default 1 MiB", 1 << 20), ("Kimi 100,000 chars", 100_000)):
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, str(ROOT), str(ws), str(budget), str(RUNS)],
                capture_output=True,
                text=True,
                check=True,
            )
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(
                f"{label}: median {r['median_s'] * 1000:.0f} ms over {RUNS} runs "
                f"(first {r['times_s'][0] * 1000:.0f} ms); returned {r['returned']}, "
                f"{r['base64_chars']} base64 chars, content JSON {r['result_json_chars']} chars; "
                f"peak RSS {r['peak_mib']:.0f} MiB = baseline {r['baseline_mib']:.0f} MiB "
                f"+ {r['peak_mib'] - r['baseline_mib']:.0f} MiB"
            )


if __name__ == "__main__":
    main()
