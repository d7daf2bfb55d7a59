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
from filegate.errors import MediaError

from .bounds import (
    DECODE_TIMEOUT_S,
    DECODES,
    MAX_DECODE_BYTES,
    SIXTEEN_BIT_MODES,
    Deadline,
    DeadlineReader,
    bytes_per_pixel,
    check_decoded_size,
)
from .headers import (
    MAX_COUNTED_FRAMES,
    MAX_JPEG_SCANS,
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
class Region:
    """A rectangle of an image in its original (upright) pixel coordinates."""

    x: int
    y: int
    width: int
    height: int


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
    region: Region | None = None  # the crop sent (out_width/out_height are its fitted size)


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
    coefficients, kind, scans = buffered
    if scans > MAX_JPEG_SCANS:
        raise MediaError(
            f"it is {kind} with more than {MAX_JPEG_SCANS} scans (encoders write about 10; each "
            "is a pass over the whole image), so it was not decoded. Make a baseline copy with "
            "an image tool and read that."
        )
    if coefficients + decoded > MAX_DECODE_BYTES:
        w, h = size
        raise MediaError(
            f"it is {kind} of {w}x{h}px: libjpeg holds all its {coefficients} bytes of DCT "
            f"coefficients while decoding it at any scale, over the {MAX_DECODE_BYTES} bytes this "
            "server decodes for one picture (a guard against decompression bombs), so it was not "
            "decoded. Make a smaller (or baseline) copy with an image tool and read that."
        )
    return coefficients + decoded


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


def check_region(region: Region, size: tuple[int, int]) -> None:
    """MediaError unless ``region`` lies inside an image of ``size`` (upright) pixels."""
    w, h = size
    if region.x + region.width > w or region.y + region.height > h:
        raise MediaError(
            f"the region x={region.x}, y={region.y}, width={region.width}, height={region.height} "
            f"is not inside the image, which is {w}x{h}px: x + width must be at most {w} and "
            f"y + height at most {h}."
        )


def stored_box(region: Region, upright: tuple[int, int], orientation: int) -> tuple[int, int, int, int]:
    """``region`` (upright coordinates) as a (left, top, right, bottom) box of the picture as
    stored, before its EXIF orientation is applied."""
    x, y, w, h = region.x, region.y, region.width, region.height
    uw, uh = upright
    sx, sy, sw, sh = {
        2: (uw - x - w, y, w, h),
        3: (uw - x - w, uh - y - h, w, h),
        4: (x, uh - y - h, w, h),
        5: (y, x, h, w),
        6: (y, uw - x - w, h, w),
        7: (uh - y - h, uw - x - w, h, w),
        8: (uh - y - h, x, h, w),
    }.get(orientation, (x, y, w, h))
    return sx, sy, sx + sw, sy + sh


def fit_image_to_budget(
    data: bytes,
    room: int,
    max_side: int,
    *,
    timeout: float = DECODE_TIMEOUT_S,
    region: Region | None = None,
    full_resolution: bool = False,
) -> FittedImage:
    """Send ``data`` as it is when it fits ``room`` base64 chars and ``max_side``, else re-encode.

    Either way the image is decoded once (a JPEG sent as it is at 1/8 scale), so a truncated
    or corrupt file is refused here rather than by the model provider. The decoded size is
    checked from the header before, and the decode holds a slot of DECODES while it runs.
    ``region`` crops the upright image first; ``full_resolution`` keeps its pixels 1:1 (no
    side limit) and refuses, with a region that would fit, when they do not fit ``room``.
    """
    deadline = Deadline(timeout)
    im = open_image(data, deadline)
    frames, more = frame_count(im, data)
    fmt = im.format or ""
    stored = im.size  # before a JPEG draft shrinks it
    side = max(stored) if full_resolution else max_side
    if region is not None:  # before the decode: a bad region costs nothing
        check_region(region, upright_size(im, stored))
    as_is = region is None and fmt in WEB_SAFE_FORMATS and max(stored) <= side and b64_len(len(data)) <= room
    if fmt in ("JPEG", "MPO"):
        # libjpeg decodes at 1/2, 1/4 or 1/8 scale: a 24 MP photo never exists at full size.
        # Sent as it is, the decode only proves the file is whole: the smallest scale does.
        # A region needs its own pixels at the size it will be sent (scale 1 for full_resolution),
        # so the whole picture is decoded at that scale: the budget below is on that decode.
        w, h = stored
        if as_is:
            target = (max(1, w // 8), max(1, h // 8))
        elif region is not None:
            scale = min(1.0, side / max(region.width, region.height))
            target = (max(1, math.ceil(w * scale)), max(1, math.ceil(h * scale)))
        else:
            target = fit_box(stored, side)
        im.draft(None if as_is else "RGB", target)
    decoded = check_decoded_size(*im.size, bytes_per_pixel(im.mode, cropped=region is not None))
    if fmt in ("JPEG", "MPO"):
        # The draft's size is what libjpeg outputs, not what it holds: a progressive JPEG
        # keeps full-size coefficients whatever the scale, so a small file of huge stored
        # dimensions is counted at its stored size.
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
            orientation = _orientation(im)
            picture = im
            if region is not None:
                check_region(region, (width, height))  # again: a PNG's EXIF is known only now
                left, top, right, bottom = stored_box(region, (width, height), orientation)
                fx, fy = im.size[0] / stored[0], im.size[1] / stored[1]  # a JPEG draft's scale
                box = (int(left * fx), int(top * fy), max(int(left * fx) + 1, round(right * fx)),
                       max(int(top * fy) + 1, round(bottom * fy)))  # fmt: skip
                picture = im.crop(box)
                im.close()  # only the crop is kept
            try:
                out, mime, (ow, oh) = encode_to_fit(
                    picture,
                    room,
                    side,
                    lossless_source=fmt in LOSSLESS_FORMATS,
                    deadline=deadline,
                    orientation=orientation,
                    full_resolution=full_resolution,
                )
            except TooLargeAtFullResolution as exc:
                raise MediaError(exc.advice(region)) from None
        finally:
            im.close()  # frees the decoded picture while the slot is still held
    return FittedImage(out, mime, width, height, ow, oh, True, frames, more, region)


@dataclass(slots=True)
class _Prepared:
    """A decoded first frame in an encodable mode, and how to treat it."""

    image: Image.Image
    orientation: int
    alpha: bool
    line_art: bool


def _prepare(im: Image.Image, orientation: int | None = None) -> _Prepared:
    orientation = _orientation(im) if orientation is None else orientation
    mode = im.mode
    alpha = mode in ("RGBA", "LA", "PA", "RGBa", "La") or "transparency" in im.info
    if mode in (*SIXTEEN_BIT_MODES, "I"):
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
        im.save(buf, "WEBP", quality=quality, method=2)  # higher methods: a little smaller, much slower
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
    orientation: int | None = None,
    full_resolution: bool = False,
) -> tuple[bytes, str, tuple[int, int]]:
    """Downscale and re-encode a loaded image (first frame, upright) until its base64 fits;
    each round first checks ``deadline``. ``orientation`` is the EXIF one when ``im`` lost it
    (a crop); ``full_resolution`` never downscales and raises TooLargeAtFullResolution."""
    max_bytes = bytes_for_chars(room)
    p = _prepare(im, orientation)
    if full_resolution:
        return _encode_full(p, max_bytes, lossless_source, deadline)
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


class TooLargeAtFullResolution(MediaError):
    """Its original pixels do not fit: ``smallest`` bytes at best, ``room`` bytes allowed."""

    def __init__(self, size: tuple[int, int], smallest: int, max_bytes: int) -> None:
        self.size, self.smallest, self.max_bytes = size, smallest, max_bytes
        super().__init__(self.advice(None))

    def advice(self, region: Region | None) -> str:
        """The refusal, with a region of the same shape whose pixels would about fit."""
        f = min(1.0, math.sqrt(self.max_bytes / max(1, self.smallest)) * 0.9)
        w, h = max(1, int(self.size[0] * f)), max(1, int(self.size[1] * f))
        x, y = (region.x, region.y) if region is not None else (0, 0)
        what = "region" if region is not None else "image"
        return (
            f"at full resolution the {what} ({self.size[0]}x{self.size[1]}px) takes {self.smallest} "
            f"bytes at best, over the {self.max_bytes} bytes this client's result budget leaves "
            f'for it. Pass a region of about {w}x{h}px, e.g. {{"x": {x}, "y": {y}, "width": {w}, '
            f'"height": {h}}}, or leave full_resolution off to get it downscaled.'
        )


def _encode_full(
    p: _Prepared, max_bytes: int, lossless_source: bool, deadline: Deadline | None
) -> tuple[bytes, str, tuple[int, int]]:
    """The prepared picture at its own size, in the first format and quality that fits."""
    w, h = p.image.size
    shown = (h, w) if p.orientation in (5, 6, 7, 8) else (w, h)
    smallest = 0
    for fmt in _formats(p, lossless_source):
        for quality in (START_QUALITY, LOW_QUALITY) if fmt != "PNG" else (0,):
            if deadline is not None:
                deadline.check()
            out = _encode(_render(p, (w, h), fmt), fmt, quality)
            if len(out) <= max_bytes:
                return out, Image.MIME[fmt], shown
            smallest = len(out) if not smallest else min(smallest, len(out))
    raise TooLargeAtFullResolution(shown, smallest, max_bytes)
