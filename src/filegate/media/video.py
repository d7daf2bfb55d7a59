"""Video fitted to a character budget with PyAV (the optional ``video`` extra).

Bytes in, frames out: no filegate import but the leaf errors module. Frames are found with one
demux pass (packets, not pictures) and decoded at most a few at a time; a whole video is
never decoded. FFmpeg decodes frames while it opens a container (to find a stream's size) and
a stream's frames may outgrow its header, so no check before the decode can bound its memory:
PyAV runs only in a child process (``worker``) under an address-space and CPU limit and a
wall-clock timeout, holding the whole decode gate (``bounds.DECODES``) while it runs. In the
child, the frames' size is still checked before the first sample is decoded, each frame is
converted to RGB already scaled down, and the work stops at its deadline.
"""

from __future__ import annotations

import base64
import bisect
import importlib
import importlib.util
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import IO, Any

from PIL import Image

from filegate.errors import MediaError
from filegate.media import installed

from .bounds import (
    DECODE_TIMEOUT_S,
    MAX_DECODE_BYTES,
    MAX_FRAMES,
    MAX_UNKNOWN_CHARS,
    Deadline,
    check_decoded_size,
)
from .image import FittedImage, encode_to_fit, fit_box
from .worker import Decoder, WorkerStopped, run_worker

# At most MAX_FRAMES frames (in bounds.py, which Pillow-free callers import) ...
# ... each getting at least this many base64 characters (≈ 12 KB JPEG, ~480 px of video).
MIN_FRAME_CHARS = 16_000
# Frames decoded forward from the keyframe before a sample point, at most (≈ 2 s at 24 fps):
# bounds the work when keyframes are far apart.
MAX_DECODE_PER_SAMPLE = 48
# Decoder threads: each holds frames in flight, so their number bounds memory too.
DECODE_THREADS = 2
# Bytes a pixel of a frame takes once converted for Pillow (rgb24).
RGB_BYTES = 3
# "The video could not be opened": what it may be, and why it is not sent anyway.
UNDECODABLE = (
    "no video decoder can open it: it may be corrupt, truncated, or only a video header. It is "
    "not sent, because a broken video can fail the client's whole request"
)


# The child's address space: a fixed part for Python, Pillow, PyAV, FFmpeg's libraries and
# threads (their VmPeak on a small clip stays under it), and the rest for one frame at the
# decode budget and its scaled copy. A frame larger than the budget fails to allocate.
WORKER_ADDRESS_SPACE = (320 << 20) + 2 * MAX_DECODE_BYTES


def load_av() -> Any | None:
    """The PyAV module, or None when the ``video`` extra is not installed."""
    try:
        return importlib.import_module("av")
    except ImportError:
        return None


def av_installed() -> bool:
    """Whether PyAV can be imported, without importing it into this process."""
    return installed("av")


@dataclass(slots=True)
class VideoInfo:
    duration: float | None = None  # seconds
    width: int | None = None
    height: int | None = None
    codec: str | None = None
    frames: int | None = None
    # Why nothing above is known, when the probe was refused or stopped.
    unknown: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class VideoFrame:
    time: float  # seconds from the start of the video
    image: FittedImage


@dataclass(slots=True)
class Keyframes:
    info: VideoInfo
    frames: list[VideoFrame] = field(default_factory=list)


def _av_error(av: Any) -> tuple[type[BaseException], ...]:
    return (av.FFmpegError, OSError, ValueError, EOFError, IndexError)


def _info(container: Any) -> VideoInfo:
    info = VideoInfo()
    if container.duration:
        info.duration = container.duration / 1_000_000  # AV_TIME_BASE is microseconds
    if not container.streams.video:
        return info
    vs = container.streams.video[0]
    ctx = vs.codec_context
    info.width, info.height = (ctx.width or None), (ctx.height or None)
    info.codec = ctx.name or None
    info.frames = vs.frames or None
    if info.duration is None and vs.duration and vs.time_base:
        info.duration = float(vs.duration * vs.time_base)
    return info


# FFmpeg's demuxer for each video type SPEC §3 admits (by the MIME type found from the
# content): the worker opens a file with that demuxer only, never by FFmpeg's own probe of
# all of its formats (playlists, image sequences, raw streams).
DEMUXERS = {
    "video/mp4": "mov", "video/x-m4v": "mov", "video/quicktime": "mov", "video/3gpp": "mov",
    "video/3gpp2": "mov", "video/webm": "matroska", "video/x-matroska": "matroska",
    "video/x-msvideo": "avi", "video/x-ms-wmv": "asf", "video/x-flv": "flv",
}  # fmt: skip


def demuxer_for(mime: str) -> str | None:
    """FFmpeg's demuxer for ``mime``, or None when this server lets FFmpeg open none."""
    return DEMUXERS.get(mime)


def probe_here(source: IO[bytes], demuxer: str | None = None) -> VideoInfo:
    """Duration, resolution and codec as FFmpeg finds them when it opens the container (which
    may decode a frame): in the worker process only."""
    av = load_av()
    if av is None:
        return VideoInfo(unknown="PyAV is not installed")
    try:
        with av.open(source, "r", format=demuxer) as container:
            return _info(container)
    except _av_error(av) as exc:
        if isinstance(exc, MemoryError):
            raise
        return VideoInfo(unknown=f"no video decoder can open it ({exc})"[:MAX_UNKNOWN_CHARS])


def frame_count_for(room: int, info: VideoInfo) -> int:
    """How many frames to send: as many as give each at least MIN_FRAME_CHARS, at most 8."""
    n = max(1, min(MAX_FRAMES, room // MIN_FRAME_CHARS))
    if not info.duration:
        return 1
    if info.frames:
        n = min(n, info.frames)
    return n


def sample_times(duration: float | None, n: int) -> list[float]:
    """``n`` evenly spaced points, each in the middle of its slice of the video."""
    if not duration:
        return [0.0]
    return [duration * (i + 0.5) / n for i in range(max(1, n))]


def _keyframe_pts(container: Any, vs: Any, deadline: Deadline) -> list[int]:
    """Keyframe timestamps from one demux pass: packets are read, never decoded."""
    keys: set[int] = set()
    for packet in container.demux(vs):
        deadline.check()
        if packet.is_keyframe and packet.pts is not None:
            keys.add(packet.pts)
    return sorted(keys)


class _FrameCursor:
    """Walks a video stream forward; seeks only when a keyframe beyond its position is nearer.

    So samples inside one long GOP are reached by decoding on, not by seeking back to the
    same keyframe again. Each sample decodes at most MAX_DECODE_PER_SAMPLE frames, and at most
    one decoded frame is held back (the first one past the previous sample point).
    """

    def __init__(self, container: Any, vs: Any, keys: list[int], deadline: Deadline) -> None:
        self.container, self.vs, self.keys = container, vs, keys
        self.deadline = deadline
        self.frames: Iterator[Any] | None = None
        self.pos: int | None = None  # pts of the last decoded frame
        self.ahead: Any | None = None

    def _seek(self, pts: int) -> None:
        self.container.seek(pts, stream=self.vs, backward=True, any_frame=False)
        self.frames = iter(self.container.decode(self.vs))
        self.pos, self.ahead = None, None

    def frame_at(self, target: int) -> Any | None:
        """The last frame at or before ``target`` pts that is within reach, else the next one."""
        i = bisect.bisect_right(self.keys, target) - 1
        key = self.keys[i] if i >= 0 else target
        if self.frames is None or self.pos is None or key > self.pos:
            self._seek(key)
        assert self.frames is not None
        best, self.ahead = self.ahead, None
        if best is not None and best.pts is not None and best.pts > target:
            return best
        for _ in range(MAX_DECODE_PER_SAMPLE):
            self.deadline.check()
            frame = next(self.frames, None)
            if frame is None:
                break
            pts = frame.pts if frame.pts is not None else (self.pos or 0)
            self.pos = pts
            if pts > target and best is not None:
                self.ahead = frame
                break
            best = frame
            if pts > target:
                break
        return best


def sample_here(
    source: IO[bytes], room: int, max_side: int, timeout: float = DECODE_TIMEOUT_S, demuxer: str | None = None
) -> Keyframes:
    """Up to MAX_FRAMES evenly spaced frames that fit ``room`` base64 characters together.

    A demux pass finds the keyframes; each sample point is then reached from the keyframe
    before it (or from where the decoder already is), decoding at most MAX_DECODE_PER_SAMPLE
    frames, so a video is never decoded as a whole. Samples that land on the same frame give
    one frame; each frame's real timestamp is reported.
    """
    av = load_av()
    if av is None:
        raise MediaError("PyAV is not installed.")
    deadline = Deadline(timeout)
    try:
        with av.open(source, "r", format=demuxer) as container:
            return _sample(container, room, max_side, deadline)
    except (MediaError, MemoryError):
        raise
    except _av_error(av) as exc:
        raise MediaError(f"{UNDECODABLE} ({exc}).") from None


def _sample(container: Any, room: int, max_side: int, deadline: Deadline) -> Keyframes:
    info = _info(container)
    if not container.streams.video:
        raise MediaError("it has no video stream.")
    vs = container.streams.video[0]
    check_decoded_size(
        vs.codec_context.width or 0, vs.codec_context.height or 0, RGB_BYTES, "each frame",
        verdict="so no frames were sampled from it",
    )  # fmt: skip
    vs.thread_type = "AUTO"
    vs.codec_context.thread_count = DECODE_THREADS
    start = vs.start_time or 0
    cursor = _FrameCursor(container, vs, _keyframe_pts(container, vs, deadline), deadline)
    result = Keyframes(info)
    seen: set[int | None] = set()
    n = frame_count_for(room, info)
    for t in sample_times(info.duration, n):
        frame = cursor.frame_at(start + int(t / vs.time_base))
        if frame is None or frame.pts in seen:
            continue
        seen.add(frame.pts)
        at = float((frame.pts - start) * vs.time_base) if frame.pts is not None else 0.0
        result.frames.append(_fit_frame(frame, max(0.0, at), room // n, max_side, deadline))
    return result


def _fit_frame(frame: Any, at: float, room: int, max_side: int, deadline: Deadline) -> VideoFrame:
    """One decoded frame as a fitted image: converted to RGB by FFmpeg already at the size it
    will be sent at (a 4K frame never exists as a full-size RGB picture)."""
    size = (frame.width, frame.height)
    check_decoded_size(*size, RGB_BYTES, "a frame", verdict="so it was not sent")  # a stream may change size
    w, h = fit_box(size, max_side)
    picture: Image.Image = frame.to_image(width=w, height=h)
    out, mime, (ow, oh) = encode_to_fit(picture, room, max_side, deadline=deadline)
    return VideoFrame(at, FittedImage(out, mime, size[0], size[1], ow, oh, True))


# --- the worker process: its side and the server's ------------------------------------------

# Who decodes a video in the worker, for the sentences that say why it was stopped.
FFMPEG = Decoder(
    "video",
    "FFmpeg's decode of it",
    "FFmpeg decoded its frames (it does so before their size is known) and needed more than the "
    "{mib} MiB this server lets one video decode use, so the decode was stopped (in a separate process).",
)


def answer_in_worker(source: IO[bytes], request: dict[str, Any]) -> dict[str, Any]:
    """A probe's or a sample's answer, as JSON, in the worker process (``worker.main``)."""
    if request["op"] == "probe":
        return {"info": probe_here(source, request["demuxer"]).as_dict()}
    kf = sample_here(source, request["room"], request["max_side"], request["timeout"], request["demuxer"])
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


def _run_worker(fd: int, request: dict[str, Any], timeout: float) -> dict[str, Any]:
    return run_worker(fd, request, timeout, WORKER_ADDRESS_SPACE, FFMPEG)


def probe_video(fd: int, demuxer: str, *, timeout: float = DECODE_TIMEOUT_S) -> VideoInfo:
    """Duration, resolution and codec, found by FFmpeg in the worker; a VideoInfo whose
    ``unknown`` says why when they cannot be (never an error: the video itself is sent)."""
    try:
        answer = _run_worker(fd, {"op": "probe", "demuxer": demuxer}, timeout)
    except MediaError as exc:
        return VideoInfo(unknown=str(exc)[:MAX_UNKNOWN_CHARS])
    return VideoInfo(**answer["info"])


def extract_keyframes(
    fd: int, room: int, max_side: int, demuxer: str, *, timeout: float = DECODE_TIMEOUT_S
) -> Keyframes:
    """Up to MAX_FRAMES evenly spaced frames that fit ``room`` base64 characters together,
    sampled by the worker (``sample_here``) from the open file ``fd``."""
    request = {"op": "frames", "room": room, "max_side": max_side, "timeout": timeout, "demuxer": demuxer}
    try:
        answer = _run_worker(fd, request, timeout)
    except WorkerStopped as exc:
        raise MediaError(f"{exc} No frames are sent; make a smaller or shorter copy and read that.") from None
    frames = []
    for f in answer["frames"]:
        w, h, ow, oh = f["size"]
        image = FittedImage(base64.b64decode(f["data"]), f["mime"], w, h, ow, oh, True)
        frames.append(VideoFrame(f["time"], image))
    return Keyframes(VideoInfo(**answer["info"]), frames)
