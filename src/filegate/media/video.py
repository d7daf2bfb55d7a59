"""Video fitted to a character budget with PyAV (the optional ``video`` extra).

Bytes in, frames out: no filegate import outside this package. Frames are found with one
demux pass (packets, not pictures) and decoded at most a few at a time; a whole video is
never decoded.
"""

from __future__ import annotations

import bisect
import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from PIL import Image

from .image import FittedImage, MediaError, encode_to_fit

# At most this many frames (the N ≤ 8) ...
MAX_FRAMES = 8
# ... each getting at least this many base64 characters (≈ 12 KB JPEG, ~480 px of video).
MIN_FRAME_CHARS = 16_000
# Frames decoded forward from the keyframe before a sample point, at most (≈ 2 s at 24 fps):
# bounds the work when keyframes are far apart.
MAX_DECODE_PER_SAMPLE = 48


def load_av() -> Any | None:
    """The PyAV module, or None when the ``video`` extra is not installed."""
    try:
        return importlib.import_module("av")
    except ImportError:
        return None


@dataclass(slots=True)
class VideoInfo:
    duration: float | None = None  # seconds
    width: int | None = None
    height: int | None = None
    codec: str | None = None
    frames: int | None = None


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


def probe_video(source: IO[bytes]) -> VideoInfo:
    """Duration, resolution and codec from the container header (no decoding)."""
    av = load_av()
    if av is None:
        return VideoInfo()
    try:
        with av.open(source, "r") as container:
            return _info(container)
    except _av_error(av) as exc:
        raise MediaError(f"it could not be read as a video ({exc}).") from None


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


def _keyframe_pts(container: Any, vs: Any) -> list[int]:
    """Keyframe timestamps from one demux pass: packets are read, never decoded."""
    keys = {p.pts for p in container.demux(vs) if p.is_keyframe and p.pts is not None}
    return sorted(keys)


class _FrameCursor:
    """Walks a video stream forward; seeks only when a keyframe beyond its position is nearer.

    So samples inside one long GOP are reached by decoding on, not by seeking back to the
    same keyframe again. Each sample decodes at most MAX_DECODE_PER_SAMPLE frames, and at most
    one decoded frame is held back (the first one past the previous sample point).
    """

    def __init__(self, container: Any, vs: Any, keys: list[int]) -> None:
        self.container, self.vs, self.keys = container, vs, keys
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


def extract_keyframes(source: IO[bytes], room: int, max_side: int) -> Keyframes:
    """Up to MAX_FRAMES evenly spaced frames that fit ``room`` base64 characters together.

    A demux pass finds the keyframes; each sample point is then reached from the keyframe
    before it (or from where the decoder already is), decoding at most MAX_DECODE_PER_SAMPLE
    frames, so a video is never decoded as a whole. Samples that land on the same frame give
    one frame; each frame's real timestamp is reported.
    """
    av = load_av()
    if av is None:
        raise MediaError("PyAV is not installed.")
    try:
        with av.open(source, "r") as container:
            info = _info(container)
            if not container.streams.video:
                raise MediaError("it has no video stream.")
            vs = container.streams.video[0]
            vs.thread_type = "AUTO"
            start = vs.start_time or 0
            cursor = _FrameCursor(container, vs, _keyframe_pts(container, vs))
            result = Keyframes(info)
            seen: set[int | None] = set()
            n = frame_count_for(room, info)
            for t in sample_times(info.duration, n):
                frame = cursor.frame_at(start + int(t / vs.time_base))
                if frame is None or frame.pts in seen:
                    continue
                seen.add(frame.pts)
                at = float((frame.pts - start) * vs.time_base) if frame.pts is not None else 0.0
                result.frames.append(_fit_frame(frame.to_image(), max(0.0, at), room // n, max_side))
            return result
    except MediaError:
        raise
    except _av_error(av) as exc:
        raise MediaError(f"it could not be decoded as a video ({exc}).") from None


def _fit_frame(picture: Image.Image, at: float, room: int, max_side: int) -> VideoFrame:
    out, mime, (w, h) = encode_to_fit(picture, room, max_side)
    pw, ph = picture.size
    return VideoFrame(at, FittedImage(out, mime, pw, ph, w, h, True))
