"""Images fitted to a character budget with Pillow.

Bytes in, bytes out: no filegate import but the leaf errors module. Callers hand in the file's bytes
and a budget in base64 characters; the image is decoded once (first frame only), within the
bounds of ``bounds.py``: its decoded size is checked from the header first, JPEGs decode at a
reduced scale, the decode waits for a slot of the process-wide gate and stops at its deadline.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import math
import struct
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

# The one filegate import here: errors is a leaf too (it imports nothing).
from filegate.errors import MediaError as MediaError  # re-exported: its old home

from .bounds import (
    DECODE_TIMEOUT_S,
    DECODES,
    MAX_DECODE_BYTES,
    Deadline,
    DeadlineReader,
    check_decoded_size,
)
from .headers import (
    MAX_COUNTED_FRAMES,
    RGBA_BYTES,
    gif_frames,
    ico_largest,
    jpeg_coefficient_bytes,
    webp_canvas,
)

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
# The formats SPEC §3 calls images, by Pillow's names: Pillow tries no other plugin on a file.
OPEN_FORMATS: tuple[str, ...] = tuple(
    f
    for f in ("PNG", "JPEG", "MPO", "GIF", "WEBP", "BMP", "DIB", "TIFF", "ICO", "HEIF", "AVIF")
    if f in Image.OPEN
)
# Formats whose frame count is cheap: PNG (APNG's acTL header), WebP (libwebp's demuxer), GIF
# (our capped block scan). Others (a TIFF may hold 50,000 pages) are not counted.
COUNTED_FORMATS = {"PNG", "WEBP", "GIF"}
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
    more_frames: bool = False  # it has more than ``frames`` (the count stopped at its cap)


# --- images ---------------------------------------------------------------------------------


UNDECODABLE = (
    "no image decoder can open it: it may be corrupt, truncated, or not really an image. It is "
    "not sent, because a broken image can fail the client's whole request."
)


def check_header(data: bytes) -> None:
    """Refuse an ICO or WebP whose pictures are over budget before Pillow opens it: both decode
    or allocate their full size inside ``Image.open``."""
    ico = ico_largest(data)
    if ico is not None:
        check_decoded_size(*ico, RGBA_BYTES, "its largest icon")
    canvas = webp_canvas(data)
    if canvas is not None:
        check_decoded_size(*canvas, RGBA_BYTES)


def open_image(data: bytes, deadline: Deadline | None = None) -> Image.Image:
    """Pillow's lazy open (header only) of a SPEC image format; MediaError when it cannot."""
    check_header(data)
    source = io.BytesIO(data) if deadline is None else DeadlineReader(data, deadline)
    try:
        return Image.open(source, formats=OPEN_FORMATS)
    except MediaError:
        raise
    except Image.DecompressionBombError as exc:
        raise MediaError(f"it has more pixels than this server decodes ({exc}).") from None
    except UnidentifiedImageError:
        raise MediaError(UNDECODABLE) from None
    except (OSError, ValueError, SyntaxError, EOFError, struct.error) as exc:
        raise MediaError(f"{UNDECODABLE} ({exc})") from None


def check_jpeg_buffers(data: bytes, size: tuple[int, int], decoded: int) -> int:
    """``decoded`` plus the whole-image coefficient buffers libjpeg holds for a progressive
    (or multi-scan) JPEG at any output scale; MediaError when together they are over
    MAX_DECODE_BYTES. A baseline JPEG costs only its ``decoded`` output."""
    buffered = jpeg_coefficient_bytes(data)
    if buffered is None:
        return decoded
    coefficients, kind = buffered
    if coefficients + decoded > MAX_DECODE_BYTES:
        w, h = size
        raise MediaError(
            f"it is {kind} of {w}x{h}px: libjpeg holds all its {coefficients} bytes of DCT "
            f"coefficients while decoding it at any scale, over the {MAX_DECODE_BYTES} bytes this "
            "server decodes for one picture (a guard against decompression bombs), so it was not "
            "decoded. Make a smaller (or baseline) copy with an image tool and read that."
        )
    return coefficients + decoded


def bytes_per_pixel(mode: str) -> int:
    """Bytes one pixel of a picture decoded in ``mode`` takes by the time it is encoded again:
    L and RGB stay as they are; every other mode (palette, bilevel, 16-bit, CMYK, with alpha)
    becomes RGB(A) or 32-bit first, 4 bytes, so an 11 KB bilevel PNG of 9400x9400 px counts
    as the 353 MB it becomes, not the 88 MB of its bilevel decode."""
    return {"L": 1, "RGB": 3}.get(mode, 4)


def frame_count(im: Image.Image, data: bytes) -> tuple[int, bool]:
    """(frames, more) where counting is cheap (COUNTED_FORMATS), capped; (1, False) elsewhere."""
    fmt = im.format or ""
    if fmt == "GIF":
        return gif_frames(data)
    if fmt not in COUNTED_FORMATS:
        return 1, False
    n = int(getattr(im, "n_frames", 1) or 1)
    return (MAX_COUNTED_FRAMES, True) if n > MAX_COUNTED_FRAMES else (n, False)


def _orientation(im: Image.Image) -> int:
    try:
        value = im.getexif().get(_ORIENTATION, 1)
    except Exception:  # a broken EXIF block must not fail the read
        return 1
    return value if isinstance(value, int) and value in _TRANSPOSE else 1


def upright_size(im: Image.Image, size: tuple[int, int] | None = None) -> tuple[int, int]:
    """The size a viewer shows (of ``size``, default the image's): width and height swapped
    for EXIF orientations 5–8."""
    w, h = size or im.size
    return (h, w) if _orientation(im) in (5, 6, 7, 8) else (w, h)


def _load(im: Image.Image) -> None:
    try:
        im.load()
    except MediaError:
        raise
    except (OSError, ValueError, SyntaxError, EOFError, struct.error) as exc:
        raise MediaError(
            f"it could not be decoded ({exc}); it may be truncated or corrupt. It is not sent, "
            "because a broken image can fail the client's whole request."
        ) from None


def fit_box(size: tuple[int, int], side: int) -> tuple[int, int]:
    """``size`` scaled down (never up) so that its longer side is at most ``side``."""
    w, h = size
    scale = min(1.0, side / max(w, h))
    return max(1, round(w * scale)), max(1, round(h * scale))


def fit_image_to_budget(
    data: bytes, room: int, max_side: int, *, timeout: float = DECODE_TIMEOUT_S
) -> FittedImage:
    """Send ``data`` as it is when it fits ``room`` base64 chars and ``max_side``, else re-encode.

    Either way the image is decoded once (a JPEG sent as it is at 1/8 scale), so a truncated
    or corrupt file is refused here rather than by the model provider. The decoded size is
    checked from the header before, and the decode holds a slot of DECODES while it runs.
    """
    deadline = Deadline(timeout)
    im = open_image(data, deadline)
    frames, more = frame_count(im, data)
    fmt = im.format or ""
    stored = im.size  # before a JPEG draft shrinks it
    as_is = fmt in WEB_SAFE_FORMATS and max(stored) <= max_side and b64_len(len(data)) <= room
    if fmt in ("JPEG", "MPO"):
        # libjpeg decodes at 1/2, 1/4 or 1/8 scale: a 24 MP photo never exists at full size.
        # Sent as it is, the decode only proves the file is whole: the smallest scale does.
        w, h = stored
        target = (max(1, w // 8), max(1, h // 8)) if as_is else fit_box(stored, max_side)
        im.draft(None if as_is else "RGB", target)
    decoded = check_decoded_size(*im.size, bytes_per_pixel(im.mode))
    if fmt in ("JPEG", "MPO"):
        # The draft's size is what libjpeg outputs, not what it holds: a progressive JPEG
        # keeps full-size coefficients (1.3 MB of 13000² held 1.4 GB at 1/8 scale).
        decoded = check_jpeg_buffers(data, stored, decoded)
    with DECODES.hold(decoded, deadline):
        try:
            deadline.check()
            _load(im)
            # After the load: Pillow finds a PNG's EXIF by decoding the whole file.
            width, height = upright_size(im, stored)
            if as_is:
                mime = WEB_SAFE_FORMATS[fmt]
                return FittedImage(data, mime, width, height, width, height, False, frames, more)
            out, mime, (ow, oh) = encode_to_fit(
                im, room, max_side, lossless_source=fmt in LOSSLESS_FORMATS, deadline=deadline
            )
        finally:
            im.close()  # frees the decoded picture while the slot is still held
    return FittedImage(out, mime, width, height, ow, oh, True, frames, more)


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
        if mode != "RGBA":  # convert() to the same mode would copy the whole picture
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
    im: Image.Image,
    room: int,
    max_side: int,
    *,
    lossless_source: bool = False,
    deadline: Deadline | None = None,
) -> tuple[bytes, str, tuple[int, int]]:
    """Downscale and re-encode a loaded image (first frame, upright) until its base64 fits;
    each round first checks ``deadline``."""
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
            if deadline is not None:
                deadline.check()
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
