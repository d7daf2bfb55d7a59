"""Real media files made on the spot: Pillow images and PyAV-encoded video clips.

Nothing here is a fixture file checked into the repo: every image and clip is encoded by the
same libraries a user's camera roll would be decoded with.
"""

from __future__ import annotations

import io
import random
import struct
import zlib
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


def write_still_noise_mp4(path: Path, size: tuple[int, int], frames: int, pad_to: int) -> Path:
    """An MP4 showing one frame of random pixels ``frames`` times (one a second), losslessly
    coded where libx264 is there; then padded with a top-level ``free`` box (which every MP4
    reader skips) to ``pad_to`` bytes. Each frame stays as costly to send as noise is, while
    the file costs only one noisy picture to make."""
    import av

    codec = pick_codec("libx264", "h264", "mpeg4")
    picture = Image.frombytes("RGB", size, random.Random(5).randbytes(size[0] * size[1] * 3))
    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream(codec, rate=1, options={"crf": "0"} if codec == "libx264" else {})
        stream.width, stream.height = size
        stream.pix_fmt = "yuv420p"
        if codec == "mpeg4":
            stream.codec_context.qscale = 1  # its finest quantiser: the noise survives
        for i in range(frames):
            frame = av.VideoFrame.from_image(picture)
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    padding = pad_to - path.stat().st_size
    if padding < 8:
        raise ValueError(f"the clip is already {path.stat().st_size} bytes, over {pad_to}")
    with path.open("ab") as f:
        f.write(struct.pack(">I4s", padding, b"free") + bytes(padding - 8))
    return path


# --- decompression bombs and other hostile files ----------------------------------------------

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# PNG colour type, bit depth and bytes a row of ``width`` pixels takes, for each mode we write.
_PNG_COLOUR = {
    "1": (0, 1, lambda w: (w + 7) // 8),
    "L": (0, 8, lambda w: w),
    "P": (3, 8, lambda w: w),
    "RGB": (2, 8, lambda w: 3 * w),
    "LA": (4, 8, lambda w: 2 * w),
    "RGBA": (6, 8, lambda w: 4 * w),
}


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def bomb_png_bytes(width: int, height: int, mode: str = "RGBA") -> bytes:
    """A valid PNG of one flat colour: tiny on disk, ``width × height × bands`` bytes decoded.

    Streamed through zlib row by row, so making a 9400x9400 bomb costs this process ~40 KB, not
    the 353 MB it decodes to.
    """
    colour, depth, row_bytes = _PNG_COLOUR[mode]
    ihdr = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    palette = png_chunk(b"PLTE", bytes([0, 0, 0, 255, 255, 255])) if mode == "P" else b""
    # Run-length matching only: rows of zeros compress as small as with the full match search.
    z = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS, 9, zlib.Z_RLE)
    row = bytes(1 + row_bytes(width))  # filter byte 0 + black pixels
    idat = b"".join(z.compress(row) for _ in range(height)) + z.flush()
    return (
        _PNG_SIGNATURE
        + png_chunk(b"IHDR", ihdr)
        + palette
        + png_chunk(b"IDAT", idat)
        + png_chunk(b"IEND", b"")
    )


def write_bomb_png(path: Path, width: int = 9400, height: int = 9400, mode: str = "RGBA") -> Path:
    path.write_bytes(bomb_png_bytes(width, height, mode))
    return path


def ico_with_png_bytes(png: bytes, listed: int = 0) -> bytes:
    """An ICO whose one entry is ``png`` (the directory's one-byte size says ``listed``: 0 = 256)."""
    entry = struct.pack("<BBBBHHII", listed, listed, 0, 0, 1, 32, len(png), 6 + 16)
    return b"\0\0\1\0" + struct.pack("<H", 1) + entry + png


def many_page_tiff_bytes(pages: int) -> bytes:
    """A little-endian TIFF of ``pages`` 1x1 grey pages, ~115 bytes each (written directly:
    Pillow's writer would take minutes for 50,000 pages)."""
    entries = 9
    ifd_size = 2 + entries * 12 + 4
    out = bytearray(b"II*\0" + struct.pack("<I", 8))
    for i in range(pages):
        ifd_at = len(out)
        pixel_at = ifd_at + ifd_size
        next_at = pixel_at + 1 if i + 1 < pages else 0
        tags = [
            (256, 3, 1, 1),  # ImageWidth
            (257, 3, 1, 1),  # ImageLength
            (258, 3, 1, 8),  # BitsPerSample
            (259, 3, 1, 1),  # Compression: none
            (262, 3, 1, 1),  # PhotometricInterpretation: black is zero
            (273, 4, 1, pixel_at),  # StripOffsets
            (277, 3, 1, 1),  # SamplesPerPixel
            (278, 3, 1, 1),  # RowsPerStrip
            (279, 4, 1, 1),  # StripByteCounts
        ]
        out += struct.pack("<H", entries)
        for tag, kind, count, value in tags:
            out += struct.pack("<HHII", tag, kind, count, value)
        out += struct.pack("<I", next_at)
        out += bytes([(i * 37) % 256])
    return bytes(out)


def many_frame_gif_bytes(frames: int, size: tuple[int, int] = (32, 24)) -> bytes:
    """An animated GIF of ``frames`` frames, each a different colour (so none are merged)."""
    imgs = [Image.new("P", size, i % 2) for i in range(frames)]
    for im in imgs:
        im.putpalette([255, 0, 0, 0, 0, 255] + [0] * 762)
    buf = io.BytesIO()
    imgs[0].save(buf, "GIF", save_all=True, append_images=imgs[1:], duration=20, loop=0, optimize=False)
    return buf.getvalue()


def noise_png_bytes(width: int, height: int, pad_to: int | None = None, seed: int = 3) -> bytes:
    """An incompressible RGB PNG (random pixels); with ``pad_to``, padded with a private
    ancillary chunk before IEND to exactly that many bytes."""
    rnd = random.Random(seed)
    buf = io.BytesIO()
    Image.frombytes("RGB", (width, height), rnd.randbytes(width * height * 3)).save(buf, "PNG")
    data = buf.getvalue()
    if pad_to is None:
        return data
    iend = data.rindex(b"IEND") - 4
    padding = pad_to - len(data) - 12
    if padding < 0:
        raise ValueError(f"the PNG is already {len(data)} bytes, over {pad_to}")
    return data[:iend] + png_chunk(b"fgPd", bytes(padding)) + data[iend:]


def write_flat_video(path: Path, width: int, height: int, frames: int = 2) -> Path:
    """An MPEG-4 clip of black ``width``x``height`` frames, made without any full-size RGB
    picture (the frames are filled as YUV planes): a small file with huge frames."""
    import av

    with av.open(str(path), "w", format="mp4") as out:
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height = width, height
        stream.pix_fmt = "yuv420p"
        for i in range(frames):
            frame = av.VideoFrame(width, height, "yuv420p")
            for plane in frame.planes:
                plane.update(bytes(plane.buffer_size))
            frame.pts = i
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def progressive_jpeg_bytes(width: int, height: int, subsampling: int = 2) -> bytes:
    """A solid-colour progressive JPEG: a small file (about 1 MB at 13000²) whose decode makes
    libjpeg hold every DCT coefficient of the whole image, whatever scale it decodes to."""
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 40)).save(
        buf, "JPEG", progressive=True, optimize=False, quality=50, subsampling=subsampling
    )
    return buf.getvalue()


def write_png_coded_avi(path: Path, frames: list[bytes], width: int, height: int) -> Path:
    """An AVI whose one PNG-coded stream says ``width``x``height`` and holds ``frames`` (PNG
    files, muxed as they are: no picture is made here, so a bomb costs this process nothing)."""
    import av

    with av.open(str(path), "w", format="avi") as out:
        stream = out.add_stream("png", rate=1)
        stream.width, stream.height, stream.pix_fmt = width, height, "rgba"
        for i, png in enumerate(frames):
            packet = av.Packet(png)
            packet.pts = packet.dts = i
            packet.stream = stream
            out.mux(packet)
    return path


def write_sparse_png(path: Path, size: int, side: int = 8) -> Path:
    """A ``side``x``side`` PNG followed by a hole up to ``size`` bytes (decoders stop at IEND):
    a file a reader must load whole, whose decode costs nothing."""
    buf = io.BytesIO()
    line_art(side, side).save(buf, "PNG")
    with path.open("wb") as f:
        f.write(buf.getvalue())
        f.truncate(size)
    return path


def sixteen_bit_png_bytes(width: int, height: int) -> bytes:
    """A 16-bit grey PNG (Pillow decodes it as I;16) of a horizontal ramp, streamed through zlib
    row by row: a few KB on disk, ``width × height × 2`` bytes as decoded."""
    ihdr = struct.pack(">IIBBBBB", width, height, 16, 0, 0, 0, 0)
    row = b"\0" + b"".join(struct.pack(">H", x * 65535 // max(1, width - 1)) for x in range(width))
    z = zlib.compressobj(9)
    idat = b"".join(z.compress(row) for _ in range(height)) + z.flush()
    return _PNG_SIGNATURE + png_chunk(b"IHDR", ihdr) + png_chunk(b"IDAT", idat) + png_chunk(b"IEND", b"")
