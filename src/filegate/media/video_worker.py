"""The child process that opens a video with PyAV: ``python -I -m filegate.media.video_worker``.

FFmpeg decodes frames while it opens a container (to find a stream's size) and a stream's frames
may be larger than its header says, so a video's decode memory cannot be bounded before it
runs. It runs here instead, under RLIMIT_AS and RLIMIT_CPU set before PyAV is imported: a bomb
fails this process, never the server. The file is this process's stdin (the server's open
descriptor); one JSON request is argv[1]; one JSON answer is written to stdout.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any


def _limit(address_space: int, cpu_seconds: int) -> None:
    if sys.platform == "win32":  # no rlimits: the separate process still keeps a bomb out of the server
        return
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))
    # SIGXCPU at the soft limit ends the process; SIGKILL one second later if it is caught.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    # Imported after the limits: PyAV and FFmpeg are loaded under them too.
    from filegate.errors import MediaError

    from .bounds import DecodeTimeout
    from .video import probe_here, sample_here

    source = os.fdopen(0, "rb", closefd=False)
    source.seek(0)  # the descriptor's offset is the server's: wherever its last read left it
    try:
        if request["op"] == "probe":
            info = probe_here(source, request["demuxer"])
            return {"info": info.as_dict()}
        kf = sample_here(source, request["room"], request["max_side"], request["timeout"], request["demuxer"])
    except MemoryError:  # PyAV's av.MemoryError (FFmpeg's ENOMEM) is one too
        return {"refused": "memory"}
    except DecodeTimeout as exc:
        return {"error": str(exc), "timeout": True}
    except MediaError as exc:
        return {"error": str(exc)}
    frames = [
        {
            "time": f.time,
            "data": base64.b64encode(f.image.data).decode("ascii"),
            "mime": f.image.mime,
            "size": [f.image.width, f.image.height, f.image.out_width, f.image.out_height],
        }
        for f in kf.frames
    ]
    return {"info": kf.info.as_dict(), "frames": frames}


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
