"""Images and videos fitted to a character budget: Pillow for images, PyAV (optional) for video.

MCP-free and policy-free: callers hand in bytes or an open file and a budget in base64
characters; these functions decode at most one frame at a time and never a whole video.
"""

from __future__ import annotations

import bisect
import contextlib
import importlib
import io
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from PIL import Image, UnidentifiedImageError

Image.init()
# HEIC/HEIF need a plugin (pillow-heif); use it when the user installed it.
with contextlib.suppress(Exception):
    importlib.import_module("pillow_heif").register_heif_opener()

# Formats every vision API we know accepts (Anthropic, OpenAI, Moonshot): sent as they are
# when they fit. Anything else (BMP, TIFF, ICO, HEIC, AVIF) is always converted.
WEB_SAFE_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "MPO": "image/jpeg",
                    "GIF": "image/gif", "WEBP": "image/webp"}  # fmt: skip
# Sources whose pixels were stored losslessly: try PNG before a lossy format.
LOSSLESS_FORMATS = {"PNG", "GIF", "BMP", "TIFF", "ICO", "DIB", "PPM", "TGA"}
# At most this many distinct colours = line art / UI / diagram: palette PNG stays crisp and small.
LINE_ART_COLORS = 256
# Pillow's own decompression-bomb threshold (~256 MB of 24-bit pixels); we refuse to decode more.
MAX_DECODE_PIXELS = Image.MAX_IMAGE_PIXELS or 89_478_485
# JPEG/WebP quality: 80 keeps photos clean; below LOW_QUALITY_SIDE px we trade quality for pixels.
START_QUALITY = 80
LOW_QUALITY = 60
LOW_QUALITY_SIDE = 768
# Re-encoding rounds per format before giving up (each shrinks the side by the size ratio).
MAX_ROUNDS = 12
# Pillow's reducing_gap: a box-filter pre-reduction by an integer factor, then LANCZOS for the
# last factor of at most 2; Pillow's docs: "indistinguishable from" a full LANCZOS at 2 or more.
RESIZE_GAP = 2.0
# Smallest side we still return: below this an image says nothing useful.
MIN_SIDE = 16
# A lossless attempt that is this many times over budget moves on to the lossy format
# (fitting it would need less than half the side, where a photo codec keeps more detail).
LOSSLESS_GIVE_UP_RATIO = 0.25
# Video: at most this many frames (the N ≤ 8) ...
MAX_FRAMES = 8
# ... each getting at least this many base64 characters (≈ 12 KB JPEG, ~480 px of video).
MIN_FRAME_CHARS = 16_000
# Frames decoded forward from the keyframe before a sample point, at most (≈ 2 s at 24 fps):
# bounds the work when keyframes are far apart.
MAX_DECODE_PER_SAMPLE = 48

# EXIF orientation → the transpose that shows the image upright (EXIF 2.32, tag 0x0112).
_ORIENTATION = 0x0112
_TRANSPOSE = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}


class MediaError(Exception):
    """Media that cannot be decoded or fitted; ``str(exc)`` is a sentence for the model."""


def b64_len(n_bytes: int) -> int:
    """Characters of the base64 encoding of ``n_bytes`` bytes."""
    return 4 * ((n_bytes + 2) // 3)


def bytes_for_chars(chars: int) -> int:
    """The most bytes whose base64 fits in ``chars`` characters."""
    return max(0, chars // 4 * 3)


@dataclass(frozen=True, slots=True)
class FittedImage:
    """An image ready to send, and what it was."""

    data: bytes
    mime: str
    width: int  # original, upright (EXIF orientation applied)
    height: int
    out_width: int
    out_height: int
    reencoded: bool
    frames: int = 1  # frames in the original (animated GIF/WebP/APNG)


# --- images ---------------------------------------------------------------------------------


def open_image(data: bytes) -> Image.Image:
    """Pillow's lazy open (header only); MediaError when Pillow does not know the format."""
    try:
        return Image.open(io.BytesIO(data))
    except Image.DecompressionBombError as exc:
        raise MediaError(f"it has more pixels than this server decodes ({exc}).") from None
    except UnidentifiedImageError:
        raise MediaError("Pillow cannot decode this image format.") from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise MediaError(f"it could not be decoded ({exc}).") from None


def _orientation(im: Image.Image) -> int:
    try:
        value = im.getexif().get(_ORIENTATION, 1)
    except Exception:  # a broken EXIF block must not fail the read
        return 1
    return value if isinstance(value, int) and value in _TRANSPOSE else 1


def upright_size(im: Image.Image) -> tuple[int, int]:
    """The size a viewer shows: width and height swapped for EXIF orientations 5–8."""
    w, h = im.size
    return (h, w) if _orientation(im) in (5, 6, 7, 8) else (w, h)


def _load(im: Image.Image) -> None:
    if im.size[0] * im.size[1] > MAX_DECODE_PIXELS:
        w, h = im.size
        raise MediaError(f"it is {w}x{h}px, more than the {MAX_DECODE_PIXELS} pixels this server decodes.")
    try:
        im.load()
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise MediaError(f"it could not be decoded ({exc}); it may be truncated or corrupt.") from None


def fit_box(size: tuple[int, int], side: int) -> tuple[int, int]:
    """``size`` scaled down (never up) so that its longer side is at most ``side``."""
    w, h = size
    scale = min(1.0, side / max(w, h))
    return max(1, round(w * scale)), max(1, round(h * scale))


def fit_image_to_budget(data: bytes, room: int, max_side: int) -> FittedImage:
    """Send ``data`` as it is when it fits ``room`` base64 chars and ``max_side``, else re-encode.

    Either way the image is fully decoded once, so a truncated or corrupt file is refused
    here rather than by the model provider.
    """
    im = open_image(data)
    width, height = upright_size(im)
    frames = int(getattr(im, "n_frames", 1) or 1)
    fmt = im.format or ""
    if fmt in WEB_SAFE_FORMATS and max(width, height) <= max_side and b64_len(len(data)) <= room:
        _load(im)
        mime = WEB_SAFE_FORMATS[fmt]
        return FittedImage(data, mime, width, height, width, height, False, frames)
    if fmt in ("JPEG", "MPO"):
        # Let libjpeg decode at 1/2, 1/4 or 1/8 scale: a 24 MP photo never exists at full size.
        im.draft("RGB", fit_box(im.size, max_side))
    _load(im)
    out, mime, (ow, oh) = encode_to_fit(im, room, max_side, lossless_source=fmt in LOSSLESS_FORMATS)
    return FittedImage(out, mime, width, height, ow, oh, True, frames)


@dataclass(slots=True)
class _Prepared:
    """A decoded first frame in an encodable mode, and how to treat it."""

    image: Image.Image
    orientation: int
    alpha: bool
    line_art: bool


def _prepare(im: Image.Image) -> _Prepared:
    orientation = _orientation(im)
    mode = im.mode
    alpha = mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in im.info
    if mode in ("I;16", "I;16B", "I;16L", "I;16N", "I"):
        im = im.convert("I").point(lambda v: v * (1 / 256)).convert("L")  # 16-bit → 8-bit
    elif alpha:
        im = im.convert("RGBA")
        lo, _hi = im.getchannel("A").getextrema()
        if lo == 255:  # an alpha channel that is opaque everywhere is no transparency
            im, alpha = im.convert("RGB"), False
    elif mode not in ("RGB", "L"):
        im = im.convert("RGB")
    line_art = im.getcolors(LINE_ART_COLORS) is not None
    return _Prepared(im, orientation, alpha, line_art)


def _formats(p: _Prepared, lossless_source: bool) -> list[str]:
    """Encoders to try, best first: PNG for line art and transparency, JPEG for photos."""
    if p.alpha:  # WebP keeps transparency when PNG is too heavy
        return ["PNG", "WEBP"] if "WEBP" in Image.SAVE else ["PNG"]
    if p.line_art or lossless_source:
        return ["PNG", "JPEG"]
    return ["JPEG"]


def _render(p: _Prepared, size: tuple[int, int], fmt: str) -> Image.Image:
    im = p.image
    if im.size != size:
        im = im.resize(size, Image.Resampling.LANCZOS, reducing_gap=RESIZE_GAP)
    if p.orientation in _TRANSPOSE:
        im = im.transpose(_TRANSPOSE[p.orientation])
    if fmt == "PNG" and p.line_art:
        method = Image.Quantize.FASTOCTREE if im.mode == "RGBA" else Image.Quantize.MEDIANCUT
        im = im.quantize(LINE_ART_COLORS, method=method, dither=Image.Dither.NONE)
    return im


def _encode(im: Image.Image, fmt: str, quality: int) -> bytes:
    buf = io.BytesIO()
    if fmt == "JPEG":
        if im.mode not in ("RGB", "L"):
            im = im.convert("RGB")
        im.save(buf, "JPEG", quality=quality, optimize=True)
    elif fmt == "WEBP":
        im.save(buf, "WEBP", quality=quality, method=2)  # 3-5: ~3% smaller, 1.5-2x slower
    else:
        im.save(buf, "PNG", compress_level=6)
    return buf.getvalue()


def encode_to_fit(
    im: Image.Image, room: int, max_side: int, *, lossless_source: bool = False
) -> tuple[bytes, str, tuple[int, int]]:
    """Downscale and re-encode a loaded image (first frame, upright) until its base64 fits."""
    max_bytes = bytes_for_chars(room)
    p = _prepare(im)
    first_size = fit_box(p.image.size, max_side)
    if p.image.size != first_size:
        # One pass over the big frame; later, smaller rounds start from this copy.
        p.image = p.image.resize(first_size, Image.Resampling.LANCZOS, reducing_gap=RESIZE_GAP)
    formats = _formats(p, lossless_source)
    for i, fmt in enumerate(formats):
        last_format = i == len(formats) - 1
        size = first_size
        quality = START_QUALITY
        for _ in range(MAX_ROUNDS):
            out = _encode(_render(p, size, fmt), fmt, quality)
            if len(out) <= max_bytes:
                w, h = size
                shown = (h, w) if p.orientation in (5, 6, 7, 8) else (w, h)
                return out, Image.MIME[fmt], shown
            ratio = max_bytes / len(out)
            if fmt == "PNG" and not last_format and ratio < LOSSLESS_GIVE_UP_RATIO:
                break
            side = max(size)
            new_side = max(MIN_SIDE, int(side * min(0.9, math.sqrt(ratio) * 0.95)))
            if fmt != "PNG" and quality > LOW_QUALITY and new_side < LOW_QUALITY_SIDE:
                quality = LOW_QUALITY  # first try fewer bits per pixel at the same size
                continue
            if side <= MIN_SIDE:
                break
            size = fit_box(p.image.size, new_side)
    raise MediaError(f"even at {MIN_SIDE}px it does not fit in {room} characters of base64.")


# --- video (PyAV, optional) ------------------------------------------------------------------


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
