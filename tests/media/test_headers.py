"""media/headers.py at its seam: sizes Pillow would only learn by decoding, and GIF frames."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from filegate.media.headers import MAX_COUNTED_FRAMES, gif_frames, ico_largest, webp_canvas
from tests import media_factory as mf


def test_ico_size_is_the_embedded_png_not_the_directory_byte() -> None:
    png = mf.bomb_png_bytes(300, 200, "L")
    assert ico_largest(mf.ico_with_png_bytes(png, listed=16)) == (300, 200)


@pytest.mark.parametrize("bitmap_format", ["png", "bmp"])
def test_ico_size_of_the_largest_entry_as_pillow_writes_it(bitmap_format: str) -> None:
    buf = io.BytesIO()
    mf.photo(64, 64).save(buf, "ICO", sizes=[(16, 16), (48, 48)], bitmap_format=bitmap_format)
    w, h = ico_largest(buf.getvalue()) or (0, 0)
    # A DIB entry's height counts its AND mask too: twice the picture, as Pillow decodes it.
    assert (w, h) == ((48, 48) if bitmap_format == "png" else (48, 96))


def test_not_an_ico_or_a_truncated_one() -> None:
    assert ico_largest(mf.bomb_png_bytes(4, 4)) is None
    assert ico_largest(b"\0\0\1\0\5\0") is None  # says 5 entries, holds none


@pytest.mark.parametrize(
    "options", [{"lossless": True}, {"quality": 50}, {"quality": 50, "exif": b"Exif\0\0MM"}]
)  # VP8L, VP8 and VP8X
def test_webp_canvas_matches_pillow(options: dict[str, object]) -> None:
    buf = io.BytesIO()
    mf.photo(123, 45).save(buf, "WEBP", **options)
    data = buf.getvalue()
    assert webp_canvas(data) == Image.open(io.BytesIO(data)).size == (123, 45)


def test_webp_canvas_of_something_else() -> None:
    assert webp_canvas(mf.bomb_png_bytes(40, 40)) is None
    assert webp_canvas(b"RIFF\0\0\0\0WEBPJUNK" + bytes(20)) is None


def test_gif_frame_count_matches_pillow_below_the_cap() -> None:
    for n in (1, 2, 6, MAX_COUNTED_FRAMES):
        data = mf.many_frame_gif_bytes(n, (8, 6))
        assert gif_frames(data) == (Image.open(io.BytesIO(data)).n_frames, False)


def test_gif_frames_past_the_cap_are_more_and_not_counted() -> None:
    data = mf.many_frame_gif_bytes(MAX_COUNTED_FRAMES + 1, (8, 6))
    assert gif_frames(data) == (MAX_COUNTED_FRAMES, True)
    assert gif_frames(b"not a gif at all") == (1, False)
    frames, more = gif_frames(data[:200])  # cut short: the frames seen so far
    assert 1 <= frames < 20 and not more
