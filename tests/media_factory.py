"""Real media files made on the spot: Pillow images and PyAV-encoded video clips.

Nothing here is a fixture file checked into the repo: every image and clip is encoded by the
same libraries a user's camera roll would be decoded with.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

from PIL import Image, ImageDraw


def photo(width: int, height: int, seed: int = 1) -> Image.Image:
    """A photo-like picture: smooth colour gradients under soft, grainy noise.

    The noise keeps JPEG from compressing it to nothing (4000x3000 at quality 90 is about
    4 MB, like a phone photo); the gradients give it structure, so downscaling stays
    meaningful.
    """
    rnd = random.Random(seed)
    size = (width, height)
    gx = Image.linear_gradient("L").rotate(90).resize(size)
    gy = Image.linear_gradient("L").resize(size)
    nw, nh = max(1, width // 2), max(1, height // 2)
    grain = [
        Image.frombytes("L", (nw, nh), rnd.randbytes(nw * nh)).resize(size, Image.Resampling.BILINEAR)
        for _ in range(3)
    ]
    base = Image.merge("RGB", (gx, gy, Image.blend(gx, gy, 0.5)))
    return Image.blend(base, Image.merge("RGB", grain), 0.3)


def jpeg_bytes(im: Image.Image, quality: int = 90, exif: Image.Exif | None = None) -> bytes:
    buf = io.BytesIO()
    kwargs = {"exif": exif} if exif is not None else {}
    im.save(buf, "JPEG", quality=quality, **kwargs)
    return buf.getvalue()


def write_photo_jpeg(path: Path, width: int, height: int, quality: int = 90) -> Path:
    path.write_bytes(jpeg_bytes(photo(width, height), quality))
    return path


def write_rotated_jpeg(path: Path, width: int = 300, height: int = 200) -> Path:
    """Stored ``width``x``height`` with EXIF orientation 6 (shown rotated 90° clockwise).

    The left half is red and the right half blue, so the upright picture has red on top.
    """
    im = Image.new("RGB", (width, height), (0, 0, 255))
    ImageDraw.Draw(im).rectangle([0, 0, width // 2 - 1, height], fill=(255, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6
    path.write_bytes(jpeg_bytes(im, 95, exif))
    return path


def line_art(width: int, height: int) -> Image.Image:
    """A diagram: white background, a few flat-coloured boxes and lines (≤ 256 colours)."""
    im = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(im)
    rnd = random.Random(7)
    for _ in range(40):
        x, y = rnd.randrange(width), rnd.randrange(height)
        colour = rnd.choice([(0, 0, 0), (200, 30, 30), (30, 120, 200), (20, 160, 60)])
        draw.rectangle([x, y, x + width // 10, y + height // 12], outline=colour, width=3)
        draw.line([x, y, rnd.randrange(width), rnd.randrange(height)], fill=colour, width=2)
    return im


def write_png(path: Path, im: Image.Image) -> Path:
    im.save(path, "PNG")
    return path


def transparent(width: int, height: int, noisy: bool = False) -> Image.Image:
    """RGBA with a real alpha gradient: a diagram on a fading background, or noise if asked."""
    body = (photo(width, height) if noisy else line_art(width, height)).convert("RGBA")
    body.putalpha(Image.linear_gradient("L").resize((width, height)))
    return body


def write_animated_gif(path: Path, frames: int = 6, size: tuple[int, int] = (64, 48)) -> Path:
    imgs = []
    for i in range(frames):
        im = Image.new("P", size, 0)
        im.putpalette([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255] + [0] * 756)
        ImageDraw.Draw(im).rectangle([i * 8, 10, i * 8 + 12, 30], fill=1 + i % 3)
        imgs.append(im)
    imgs[0].save(path, "GIF", save_all=True, append_images=imgs[1:], duration=80, loop=0)
    return path


def write_truncated_png(path: Path, width: int = 400, height: int = 300) -> Path:
    buf = io.BytesIO()
    photo(width, height).save(buf, "PNG")
    data = buf.getvalue()
    path.write_bytes(data[: len(data) * 2 // 3])
    return path


def write_sparse(path: Path, size: int) -> Path:
    with path.open("wb") as f:
        f.truncate(size)
    return path


# --- video (PyAV) ----------------------------------------------------------------------------


def pick_codec(*names: str) -> str:
    """The first encoder this PyAV build has (h264 needs libx264; mpeg4 is always there)."""
    import av

    for name in names:
        try:
            av.codec.Codec(name, "w")
        except Exception:
            continue
        return name
    raise RuntimeError(f"none of the encoders {names} is available")


def write_clip(
    path: Path,
    codec: str,
    container_format: str,
    seconds: float = 2.0,
    fps: int = 10,
    size: tuple[int, int] = (160, 120),
    gop: int = 5,
    noisy: bool = False,
) -> Path:
    """A real encoded clip: a square moving over a coloured background (+ noise if asked)."""
    import av

    with av.open(str(path), "w", format=container_format) as out:
        stream = out.add_stream(codec, rate=fps)
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        stream.codec_context.gop_size = gop
        for i in range(int(seconds * fps)):
            im = photo(*size, seed=i) if noisy else Image.new("RGB", size, (i * 9 % 255, 80, 160))
            x = i * size[0] // int(seconds * fps)
            ImageDraw.Draw(im).rectangle([x, 20, x + 30, 50], fill=(255, 255, 0))
            for packet in stream.encode(av.VideoFrame.from_image(im)):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def write_mp4(path: Path, **kw: object) -> Path:
    return write_clip(path, pick_codec("libx264", "h264", "mpeg4"), "mp4", **kw)  # type: ignore[arg-type]


def write_webm(path: Path, **kw: object) -> Path:
    return write_clip(path, pick_codec("libvpx-vp9", "libvpx", "vp8"), "webm", **kw)  # type: ignore[arg-type]
