"""media/image.py at its seam: fitting at the budget's edge, refusals, the deadline."""

from __future__ import annotations

import io
import struct
import time
from pathlib import Path

import pytest
from PIL import Image

from filegate.errors import MediaError
from filegate.media.bounds import DECODES, DecodeTimeout
from filegate.media.image import Region, b64_len, bytes_for_chars, fit_image_to_budget
from filegate.media.video import extract_keyframes, probe_video
from tests import media_factory as mf


def test_base64_arithmetic_at_its_edges() -> None:
    assert [b64_len(n) for n in (0, 1, 2, 3, 4)] == [0, 4, 4, 4, 8]
    assert [bytes_for_chars(c) for c in (0, 3, 4, 7, 8)] == [0, 0, 3, 3, 6]
    for n in range(50):
        assert b64_len(bytes_for_chars(b64_len(n))) == b64_len(n)


def test_image_whose_base64_is_exactly_the_room_is_sent_as_it_is() -> None:
    data = mf.noise_png_bytes(60, 60)
    room = b64_len(len(data))
    fitted = fit_image_to_budget(data, room, 2048)
    assert not fitted.reencoded and fitted.data == data and fitted.mime == "image/png"
    smaller = fit_image_to_budget(data, room - 1, 2048)
    assert smaller.reencoded and b64_len(len(smaller.data)) <= room - 1
    assert (smaller.width, smaller.height) == (60, 60)


def test_image_whose_side_is_exactly_the_limit_is_sent_as_it_is() -> None:
    data = mf.noise_png_bytes(100, 80)
    assert not fit_image_to_budget(data, 1 << 20, 100).reencoded
    fitted = fit_image_to_budget(data, 1 << 20, 99)
    assert fitted.reencoded and (fitted.out_width, fitted.out_height) == (99, 79)


def test_bomb_is_refused_from_its_header() -> None:
    # RGBA: 4 bytes stored, and an RGB copy beside it when its alpha turns out opaque.
    with pytest.raises(MediaError, match=r"^it is 9400x9400px with 8 bytes a pixel: 706880000 bytes"):
        fit_image_to_budget(mf.bomb_png_bytes(9400, 9400), 1 << 20, 2048)


@pytest.mark.parametrize(("mode", "cost"), [("1", 5), ("P", 5), ("LA", 8)])
def test_a_bomb_counts_the_rgb_picture_it_becomes_not_its_compact_decode(mode: str, cost: int) -> None:
    # As stored (1 byte a pixel; LA 4), plus the RGB(A) copy made for encoding: 9400x9400 is over.
    decoded = 9400 * 9400 * cost
    with pytest.raises(MediaError, match=rf"^it is 9400x9400px with {cost} bytes a pixel: {decoded} bytes"):
        fit_image_to_budget(mf.bomb_png_bytes(9400, 9400, mode), 1 << 20, 2048)


def test_gif_whose_screen_is_a_bomb_is_refused_from_its_header() -> None:
    # 45 bytes: a 9400x9400 logical screen holding one 1x1 frame; Pillow decodes frame 0 on
    # the whole screen, then the encoder needs it as RGB.
    gif = (
        b"GIF89a" + struct.pack("<HH", 9400, 9400) + b"\x80\0\0" + b"\0\0\0\xff\xff\xff"
        + b"," + struct.pack("<HHHH", 0, 0, 1, 1) + b"\0" + b"\x02\x02\x44\x01\0" + b";"
    )  # fmt: skip
    assert Image.open(io.BytesIO(gif)).size == (9400, 9400)
    with pytest.raises(MediaError, match=r"^it is 9400x9400px with 5 bytes a pixel"):
        fit_image_to_budget(gif, 1 << 20, 2048)


def test_grey_picture_counts_one_byte_a_pixel() -> None:
    fitted = fit_image_to_budget(mf.bomb_png_bytes(3000, 2000, "L"), 1 << 20, 512)
    assert fitted.reencoded and (fitted.out_width, fitted.out_height) == (512, 341)


def test_truncated_jpeg_that_fits_is_refused_although_checked_at_reduced_scale() -> None:
    data = mf.jpeg_bytes(mf.photo(800, 600))
    assert not fit_image_to_budget(data, 1 << 20, 2048).reencoded
    with pytest.raises(MediaError, match="truncated or corrupt"):
        fit_image_to_budget(data[: len(data) - 10], 1 << 20, 2048)


def test_a_decode_past_its_deadline_is_stopped() -> None:
    data = mf.jpeg_bytes(mf.photo(4000, 3000))  # ~1 s to decode and re-encode here
    start = time.monotonic()
    with pytest.raises(DecodeTimeout, match=r"took longer than the 0\.05 s this server allows"):
        fit_image_to_budget(data, 200_000, 4000, timeout=0.05)
    assert time.monotonic() - start < 0.5


def test_a_video_past_its_deadline_is_stopped(tmp_path: Path) -> None:
    clip = mf.write_mp4(tmp_path / "clip.mp4", size=(320, 240), noisy=True)
    with clip.open("rb") as f:
        assert extract_keyframes(f.fileno(), 100_000, 2048, "mov").frames  # in time: frames
    with clip.open("rb") as f, pytest.raises(DecodeTimeout, match="took longer"):
        extract_keyframes(f.fileno(), 100_000, 2048, "mov", timeout=0.0)


def test_a_video_is_opened_only_with_the_demuxer_of_its_detected_type(tmp_path: Path) -> None:
    # The worker never lets FFmpeg probe every format it has: an MP4 handed over as an AVI is
    # opened with the AVI demuxer, which cannot read it (unpinned, FFmpeg would find "mov").
    clip = mf.write_mp4(tmp_path / "clip.mp4")
    with clip.open("rb") as f:
        assert probe_video(f.fileno(), "mov").codec == "h264"
        info = probe_video(f.fileno(), "avi")
    assert info.codec is None and info.unknown and info.unknown.startswith("no video decoder can open it (")


def test_a_16_bit_picture_is_charged_its_32_bit_conversions_not_its_decode() -> None:
    # Issue 41 item 9: a 16-bit PNG is 2 bytes a pixel as decoded, then a 32-bit copy and its
    # scaled 32-bit copy on the way to 8-bit: 10 bytes a pixel (582 MB for a 78 KB file when
    # it was charged 4). 3700x3700 is 55 MB at 4 bytes, 137 MB at 10: over the budget.
    data = mf.sixteen_bit_png_bytes(3700, 3700)
    assert Image.open(io.BytesIO(data)).mode == "I;16"
    region = Region(100, 200, 3000, 2000)
    for kw in ({}, {"region": region, "full_resolution": True}):
        with pytest.raises(MediaError, match=r"^it is 3700x3700px with 10 bytes a pixel: 136900000 bytes"):
            fit_image_to_budget(data, 1 << 20, 2048, **kw)  # type: ignore[arg-type]


def test_a_16_bit_region_at_full_resolution_holds_the_decode_gate_at_its_real_cost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    costs: list[int] = []
    take = DECODES._take
    monkeypatch.setattr(
        DECODES, "_take", lambda cost, deadline: (costs.append(cost), take(cost, deadline))[1]
    )
    data = mf.sixteen_bit_png_bytes(1200, 900)
    fitted = fit_image_to_budget(data, 1 << 22, 2048, region=Region(0, 0, 600, 450), full_resolution=True)
    assert (fitted.out_width, fitted.out_height) == (600, 450)
    assert costs == [1200 * 900 * 10]
    with Image.open(io.BytesIO(fitted.data)) as out:  # the ramp's 16 bits became 8, not clipped
        assert out.convert("L").getextrema() == (0, 127)
