"""ReadMediaFile's `region` and `full_resolution` (SPEC §4), through real MCP clients in both eras:
the image block's pixels are decoded with Pillow and compared with the source's."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client
from PIL import Image, ImageChops, ImageStat

from filegate.media.bounds import MAX_DECODE_BYTES
from tests import media_factory as mf
from tests.conftest import MODES_LEGACY_SLOW, call, connect, stdio_transport, text


@pytest.fixture(params=MODES_LEGACY_SLOW)
def mode(request: pytest.FixtureRequest) -> str:
    """Both eras; the handshake-era twin in the slow set (tests/conftest.py says why)."""
    return str(request.param)


def image_of(result: Any) -> Image.Image:
    assert not result.is_error, text(result)
    (img,) = [b for b in result.content if b.type == "image"]
    return Image.open(io.BytesIO(base64.b64decode(img.data)))


def same_pixels(a: Image.Image, b: Image.Image, tolerance: int = 0) -> bool:
    diff = ImageChops.difference(a.convert("RGB"), b.convert("RGB")).getextrema()
    return max(hi for _lo, hi in diff) <= tolerance


def mean_difference(a: Image.Image, b: Image.Image) -> float:
    """Mean absolute difference per channel (0-255) of 64 px-wide thumbnails: the grain a
    re-encoding changes averages out, the picture's place does not."""
    a, b = (im.convert("RGB").resize((64, 64 * im.height // im.width), Image.Resampling.BOX) for im in (a, b))
    return sum(ImageStat.Stat(ImageChops.difference(a, b)).mean) / 3


@pytest.fixture
def diagram(ws: Path) -> Image.Image:
    im = mf.line_art(3000, 2000)
    mf.write_png(ws / "diagram.png", im)
    return im


async def test_region_is_the_crop_of_the_original_pixels_with_its_scale(
    ws: Path, mode: str, diagram: Image.Image
) -> None:
    region = {"x": 100, "y": 200, "width": 400, "height": 300}
    async with connect(ws, mode) as c:
        r = await call(c, "ReadMediaFile", path="diagram.png", region=region)
    got = image_of(r)
    assert got.size == (400, 300)
    assert same_pixels(got, diagram.crop((100, 200, 500, 500)))
    assert (
        f"(image/png, {(ws / 'diagram.png').stat().st_size} bytes, original size 3000x2000px; "
        "region x=100, y=200, 400x300px; returned as 400x300px image/png, "
    ) in text(r)
    assert "scale 1: original x = 100 + returned x / 1, original y = 200 + returned y / 1)." in text(r)


async def test_a_large_region_is_fitted_like_any_image_and_says_its_scale(
    ws: Path, mode: str, diagram: Image.Image
) -> None:
    region = {"x": 0, "y": 500, "width": 3000, "height": 1500}
    async with connect(ws, mode) as c:  # --image-max-side 2048
        r = await call(c, "ReadMediaFile", path="diagram.png", region=region)
    assert image_of(r).size == (2048, 1024)
    scale = re.search(r"scale ([0-9.]+): original x = 0 \+ returned x / \1, original y = 500 \+", text(r))
    assert scale and float(scale[1]) == pytest.approx(2048 / 3000, abs=1e-4)


async def test_region_of_a_jpeg_decoded_at_a_reduced_scale_keeps_its_place(ws: Path, mode: str) -> None:
    # 4000x3000 photo, a 3000x2000 region: libjpeg decodes at 1/2 (the region's 2048 px need
    # no more), and the crop is taken from the same place in the half-size picture.
    photo = mf.photo(4000, 3000)
    (ws / "photo.jpg").write_bytes(mf.jpeg_bytes(photo, 95))
    async with connect(ws, mode) as c:
        r = await call(
            c, "ReadMediaFile", path="photo.jpg", region={"x": 1000, "y": 1000, "width": 3000, "height": 2000}
        )
    got = image_of(r)
    assert got.size == (2048, 1365)
    want = photo.crop((1000, 1000, 4000, 3000)).resize(got.size, Image.Resampling.LANCZOS)
    shifted = photo.crop((900, 900, 3900, 2900)).resize(got.size, Image.Resampling.LANCZOS)
    assert mean_difference(got, want) < 4 < mean_difference(got, shifted)
    assert "region x=1000, y=1000, 3000x2000px; returned as 2048x1365px image/jpeg" in text(r)


async def test_region_is_in_upright_coordinates_for_an_exif_rotated_photo(ws: Path, mode: str) -> None:
    mf.write_rotated_jpeg(ws / "rotated.jpg", 300, 200)  # shown 200x300: red top half, blue bottom
    async with connect(ws, mode) as c:
        top = await call(
            c, "ReadMediaFile", path="rotated.jpg", region={"x": 0, "y": 0, "width": 200, "height": 140}
        )
        bottom = await call(
            c, "ReadMediaFile", path="rotated.jpg", region={"x": 0, "y": 160, "width": 200, "height": 140}
        )
    for result, colour in ((top, (255, 0, 0)), (bottom, (0, 0, 255))):
        got = image_of(result).convert("RGB")
        assert got.size == (200, 140)
        assert same_pixels(got, Image.new("RGB", got.size, colour), tolerance=40)
        assert "original size 200x300px" in text(result)


async def test_full_resolution_sends_original_pixels_over_the_side_limit(
    ws: Path, mode: str, diagram: Image.Image
) -> None:
    async with connect(ws, mode) as c:
        r = await call(c, "ReadMediaFile", path="diagram.png", full_resolution=True)
    got = image_of(r)
    assert got.size == (3000, 2000) and same_pixels(got, diagram)
    assert "original size 3000x2000px" in text(r)


async def test_full_resolution_without_a_region_states_its_scale_and_mapping(ws: Path, mode: str) -> None:
    """A BMP is never sent as it is: re-encoded at its original pixels, the summary says so and
    gives the mapping (scale 1 from the origin), as for a region; a plain read does not."""
    photo = mf.photo(300, 200)
    photo.save(ws / "photo.bmp")
    async with connect(ws, mode) as c:
        full = await call(c, "ReadMediaFile", path="photo.bmp", full_resolution=True)
        plain = await call(c, "ReadMediaFile", path="photo.bmp")
    assert image_of(full).size == (300, 200) and same_pixels(image_of(full), photo)
    assert re.search(
        r"original size 300x200px; returned as 300x200px image/png, \d+ bytes, scale 1: original "
        r"x = 0 \+ returned x / 1, original y = 0 \+ returned y / 1\)\. ",
        text(full),
    ), text(full)
    assert "returned as" in text(plain) and "scale" not in text(plain)


async def test_full_resolution_over_the_budget_is_refused_with_a_region_that_fits(
    ws: Path, mode: str
) -> None:
    photo = mf.photo(1600, 1200)
    (ws / "photo.jpg").write_bytes(mf.jpeg_bytes(photo, 95))
    async with connect(ws, mode, client="kimi") as c:  # 100,000 characters
        r = await call(c, "ReadMediaFile", path="photo.jpg", full_resolution=True)
        assert r.is_error
        msg = text(r)
        assert msg.startswith(
            "Failed to read `photo.jpg` as image (image/jpeg): at full resolution the image (1600x1200px) "
            "takes "
        )
        hint = re.search(r'e\.g\. \{"x": 0, "y": 0, "width": (\d+), "height": (\d+)\}', msg)
        assert hint, msg
        assert "or leave full_resolution off to get it downscaled." in msg
        w, h = int(hint[1]), int(hint[2])
        region = {"x": 0, "y": 0, "width": w, "height": h}
        again = await call(c, "ReadMediaFile", path="photo.jpg", region=region, full_resolution=True)
    got = image_of(again)
    assert got.size == (w, h)  # the suggestion fits, at its original pixels
    assert same_pixels(got, photo.crop((0, 0, w, h)), tolerance=80)


@pytest.mark.parametrize(
    ("region", "says"),
    [
        (
            {"x": -1, "y": 0, "width": 10, "height": 10},
            "region.x: Input should be greater than or equal to 0",
        ),
        (
            {"x": 0, "y": 0, "width": 0, "height": 10},
            "region.width: Input should be greater than or equal to 1",
        ),
        ({"x": 0, "y": 0, "width": 10.5, "height": 10}, "region.width: Input should be a valid integer"),
        ({"x": 0, "y": 0, "width": 10}, "region.height: Field required"),
        (
            {"x": 2900, "y": 0, "width": 200, "height": 10},
            "Failed to read `diagram.png` as image (image/png): the region x=2900, y=0, width=200, "
            "height=10 is not inside the image, which is 3000x2000px: x + width must be at most 3000 "
            "and y + height at most 2000.",
        ),
    ],
)
async def test_bad_regions_are_refused_clearly(
    ws: Path, mode: str, diagram: Image.Image, region: dict[str, Any], says: str
) -> None:
    async with connect(ws, mode) as c:
        r = await call(c, "ReadMediaFile", path="diagram.png", region=region)
    assert r.is_error and says in text(r), text(r)


async def test_region_and_full_resolution_are_ignored_for_video_and_said_so(ws: Path, mode: str) -> None:
    mf.write_mp4(ws / "clip.mp4")
    async with connect(ws, mode) as c:
        r = await call(c, "ReadMediaFile", path="clip.mp4", region={"x": 0, "y": 0, "width": 8, "height": 8})
    assert not r.is_error, text(r)
    assert [b.type for b in r.content][:2] == ["text", "resource"]
    assert text(r).endswith("(region and full_resolution apply to images only: ignored for this video.)")


@pytest.mark.slow
async def test_a_region_of_a_bomb_is_still_a_bomb(ws: Path) -> None:
    # The bound is on the decode, not the crop: a 16x16 region of a 9400² PNG or progressive
    # JPEG is refused from its header, before anything is decoded (a region needs the whole
    # picture decoded at the scale the region is sent at: here 1:1).
    mf.write_bomb_png(ws / "bomb.png", 9400, 9400, "RGBA")
    (ws / "prog.jpg").write_bytes(mf.progressive_jpeg_bytes(9400, 9400))
    region = {"x": 0, "y": 0, "width": 16, "height": 16}
    async with connect(ws) as c:
        png = await call(c, "ReadMediaFile", path="bomb.png", region=region)
        jpg = await call(c, "ReadMediaFile", path="prog.jpg", region=region, full_resolution=True)
    assert png.is_error and "706880000 bytes once decoded, over the " in text(
        png
    )  # RGBA: 8 B/px (issue 41.9)
    assert jpg.is_error and f"706880000 bytes once decoded, over the {MAX_DECODE_BYTES}" in text(
        jpg
    )  # RGB 4 + crop 4


@pytest.mark.slow
async def test_region_over_stdio_from_the_installed_server(ws: Path, diagram: Image.Image) -> None:
    region = {"x": 2000, "y": 1000, "width": 1000, "height": 1000}
    async with Client(stdio_transport(ws)) as c:
        r = await call(c, "ReadMediaFile", path="diagram.png", region=region, full_resolution=True)
    got = image_of(r)
    assert got.size == (1000, 1000) and same_pixels(got, diagram.crop((2000, 1000, 3000, 2000)))
    assert "region x=2000, y=1000, 1000x1000px; returned as 1000x1000px image/png" in text(r)
    assert "scale 1: original x = 2000 + returned x / 1, original y = 1000 + returned y / 1" in text(r)
