"""ReadMediaFile: an image or a video as MCP content blocks, fitted to the client's budget."""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Annotated
from urllib.parse import quote

import anyio
from pydantic import BaseModel, ConfigDict, Field

from filegate.errors import MediaError, PathError
from filegate.fsio.loads import holding
from filegate.fsio.platform import pread
from filegate.fsio.safeopen import open_regular, read_whole
from filegate.media.bounds import MAX_FRAMES, MAX_UNKNOWN_CHARS
from filegate.media.pdf_pages import MAX_PAGE_IMAGES
from filegate.policy.budget import MAX_MEDIA_BYTES
from filegate.policy.filetype import SNIFF_BYTES, FileType, detect_file_type, document_kind
from filegate.policy.workspace import ResolvedPath, Workspace
from filegate.tools.describe import load_description, path_help
from filegate.tools.documents.media_fit import Limits, checked_fit, room_for
from filegate.tools.documents.pdf_images import IGNORED_FOR_PDF, PDF_EXTRA, read_pdf_pages
from filegate.tools.outcome import (
    ImagePart,
    MediaPart,
    Outcome,
    ResourcePart,
    TextPart,
    ToolEnv,
    ToolSpec,
)
from filegate.tools.readguard.ledger import identity_of

if TYPE_CHECKING:
    from filegate.media.image import FittedImage
    from filegate.media.video import Keyframes, VideoInfo

# Pillow (filegate.media.image, .video) is imported by the first call that decodes, not at
# start: its import (~0.1 s of CPU, ~0.5 s of wall time on a busy machine) would delay every
# server's first answer (tests/test_architecture.py checks a stdio start does without it).

# Kimi's MAX_MEDIA_MEGABYTES, as its message words it.
MAX_MEDIA_MB = MAX_MEDIA_BYTES >> 20
# Kimi's sentence after every loaded image or video (read_media.py).
COORDINATES_ADVICE = (
    "If you need to output coordinates, output relative coordinates first and compute absolute "
    "coordinates using the original image size; if you generate or edit images/videos via "
    "commands or scripts, read the result back immediately before continuing."
)
VIDEO_EXTRA = "pip install 'filegate[video]'"
# Numbers that are at least as long as any real one: used to reserve room for the text blocks
# before the media's own figures are known.
_WIDE = 10**12
_WIDE_FLOAT = 10.0**9


class RegionParam(BaseModel):
    # A crop in the image's original pixels: integers (10.0 is taken as 10, 10.5 is refused).
    # No docstring: it would be sent in the tool's schema.
    model_config = ConfigDict(extra="forbid")

    x: Annotated[int, Field(ge=0)]
    y: Annotated[int, Field(ge=0)]
    width: Annotated[int, Field(ge=1)]
    height: Annotated[int, Field(ge=1)]


class ReadMediaFileParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Annotated[str, Field(description=path_help("read"))]
    region: Annotated[
        RegionParam | None,
        Field(description="An image crop in original pixels."),
    ] = None
    full_resolution: Annotated[bool, Field(description="Send original pixels, not downscaled.")] = False
    pages: Annotated[
        str | None,
        Field(
            pattern=r"^[1-9][0-9]{0,6}(-[1-9][0-9]{0,6})?$",
            description=f'PDF pages as images, "3" or "3-5" (at most {MAX_PAGE_IMAGES}).',
        ),
    ] = None


# --- the gate: size, then type -----------------------------------------------------------


def _check_size(rp: ResolvedPath, size: int) -> None:
    if size == 0:
        raise PathError(f"`{rp.shown}` is empty.", "Empty file")
    if size > MAX_MEDIA_BYTES:
        raise PathError(
            f"`{rp.shown}` is {size} bytes, which exceeds the max {MAX_MEDIA_MB}MB bytes for media files.",
            "File too large",
        )


def _check_media(rp: ResolvedPath, ft: FileType) -> None:
    if ft.kind == "text":
        raise PathError(
            f"`{rp.shown}` is a text file. Use ReadFile to read text files.",
            "Unsupported file type",
        )
    if ft.kind == "unknown":
        raise PathError(
            f"`{rp.shown}` seems not readable as an image or video file ({ft.mime}). You may need "
            "to read it with proper shell commands, Python tools or MCP tools if available. If "
            "you read/operate it with Python, you MUST ensure that any third-party packages are "
            "installed in a virtual environment (venv).",
            "File not readable",
        )


def _read_all(fd: int, size: int) -> bytes:
    """The file's first ``size`` bytes (the size its checks were made on)."""
    data = read_whole(fd, size)
    return data if len(data) <= size else data[:size]


# --- images -------------------------------------------------------------------------------


def _scale_text(img: FittedImage, wide: bool) -> str:
    """The scale of a crop or a full-resolution image, and how its coordinates map back."""
    from filegate.media.image import Region

    if wide:  # reserving room: longer than any real figures
        return ", scale " + "9" * 24 + ": original x = " + "9" * 12 + " + returned x / " + "9" * 24 * 2
    crop = img.region or Region(0, 0, img.width, img.height)
    scale = f"{img.out_width / crop.width:.4g}"
    return (
        f", scale {scale}: original x = {crop.x} + returned x / {scale}, "
        f"original y = {crop.y} + returned y / {scale}"
    )


def _image_outcome(
    rp: ResolvedPath, ft: FileType, size: int, img: FittedImage, *, mapped: bool = False,
    wide: bool = False,
) -> Outcome:  # fmt: skip
    message = (
        f"Loaded image file `{rp.shown}` ({ft.mime}, {size} bytes, original size {img.width}x{img.height}px"
    )
    if img.region is not None:
        r = img.region
        message += f"; region x={r.x}, y={r.y}, {r.width}x{r.height}px"
    if img.reencoded:
        message += f"; returned as {img.out_width}x{img.out_height}px {img.mime}, {len(img.data)} bytes"
        if mapped:
            message += _scale_text(img, wide)
        if img.frames > 1:
            more = "more than " if img.more_frames else ""
            message += f", the first of {more}{img.frames} frames"
    message += f"). {COORDINATES_ADVICE}"
    tag = html.escape(rp.shown, quote=True)
    return Outcome(
        message=message,
        parts=[TextPart(f'<image path="{tag}">'), ImagePart(img.data, img.mime), TextPart("</image>")],
    )


def _read_image(
    rp: ResolvedPath, fd: int, size: int, ft: FileType, env: ToolEnv, params: ReadMediaFileParams
) -> Outcome:
    from filegate.media.image import FittedImage, Region, fit_image_to_budget

    # The scale and its mapping are said whenever the caller chose the pixels (a region, or
    # full resolution), so its coordinates map back without arithmetic on the sizes.
    mapped = params.region is not None or params.full_resolution
    region = Region(**params.region.model_dump()) if params.region is not None else None
    wide_region = Region(_WIDE, _WIDE, _WIDE, _WIDE) if region is not None else None
    wide = FittedImage(b"", "image/jpeg", _WIDE, _WIDE, _WIDE, _WIDE, True, _WIDE, True, wide_region)
    limits = Limits.of(env)
    room = room_for(limits, _image_outcome(rp, ft, _WIDE, wide, mapped=mapped, wide=True))
    with holding(size):  # the file's room in the process's load budget, while it is held
        data = _read_all(fd, size)
        img = fit_image_to_budget(
            data, room, env.image_max_side, region=region, full_resolution=params.full_resolution
        )
        del data
    outcome = _image_outcome(rp, ft, size, img, mapped=mapped)
    return checked_fit(outcome, limits)


def _decode_hint(ft: FileType) -> str:
    if ft.mime in ("image/heic", "image/heif"):
        return (
            " HEIC/HEIF needs the pillow-heif plugin (`pip install pillow-heif` in the server's "
            "environment); or convert the file to JPEG or PNG first."
        )
    if ft.mime == "image/avif":
        return (
            " This server's Pillow has no AVIF support: upgrade Pillow, or convert the file to "
            "JPEG or PNG first."
        )
    return ""


# --- videos -------------------------------------------------------------------------------


def resource_uri(workspace: Workspace, rp: ResolvedPath) -> str:
    """``filegate://workspace/<workdir-relative path>`` inside the workspace (no absolute
    path of the machine leaks), the file's ``file://`` URI outside it."""
    if not rp.inside:
        return rp.real.as_uri()
    rel = PurePosixPath(os.path.relpath(rp.real, workspace.workdir))
    return "filegate://workspace/" + quote(str(rel))


def _describe_video(ft: FileType, size: int, info: VideoInfo) -> str:
    facts = [ft.mime, f"{size} bytes"]
    if info.duration is not None:
        facts.append(f"duration {info.duration:.2f} s")
    if info.width and info.height:
        facts.append(f"{info.width}x{info.height}px")
    if info.codec:
        facts.append(f"codec {info.codec}")
    described = ", ".join(facts)
    if info.unknown:  # the probe was refused or stopped: the video is sent all the same
        described += f"\nIts duration, size and codec are unknown: {info.unknown}"
    return described


def _video_outcome(
    rp: ResolvedPath, ft: FileType, size: int, info: VideoInfo, uri: str, data: bytes
) -> Outcome:
    tag = html.escape(rp.shown, quote=True)
    header = f'<video path="{tag}">\n{_describe_video(ft, size, info)}'
    message = f"Loaded video file `{rp.shown}` ({ft.mime}, {size} bytes). {COORDINATES_ADVICE}"
    return Outcome(
        message=message,
        parts=[TextPart(header), ResourcePart(uri, ft.mime, data), TextPart("</video>")],
    )


def _frames_outcome(rp: ResolvedPath, ft: FileType, size: int, kf: Keyframes, limits: Limits) -> Outcome:
    info, frames = kf.info, kf.frames
    n = len(frames)
    tag = html.escape(rp.shown, quote=True)
    parts: list[MediaPart] = [
        TextPart(
            f'<video path="{tag}">\n{_describe_video(ft, size, info)}\nThe video is over this '
            f"client's {limits.name} ({limits.chars} characters), so here "
            + (f"are {n} evenly spaced frames." if n != 1 else "is one frame of it.")
        )
    ]
    for i, frame in enumerate(frames, 1):
        parts.append(TextPart(f"Frame {i}/{n} at {frame.time:.2f} s:"))
        parts.append(ImagePart(frame.image.data, frame.image.mime))
    parts.append(TextPart("</video>"))
    first = frames[0].image if frames else None
    shape = f" of {first.out_width}x{first.out_height}px {first.mime}" if first else ""
    sent = sum(len(f.image.data) for f in frames)
    size_text = f", original size {info.width}x{info.height}px" if info.width else ""
    message = (
        f"Loaded video file `{rp.shown}` ({ft.mime}, {size} bytes{size_text}) as {n} "
        f"frame{'s' if n != 1 else ''}{shape}, {sent} bytes. {COORDINATES_ADVICE}"
    )
    return Outcome(message=message, parts=parts)


def _wide_info() -> VideoInfo:
    from filegate.media.video import VideoInfo

    return VideoInfo(_WIDE_FLOAT, _WIDE, _WIDE, "x" * 32, _WIDE, "x" * MAX_UNKNOWN_CHARS)


# Said after an image's or a video's summary when the caller passed ``pages``.
PAGES_IGNORED = " (pages applies to PDFs only: ignored for this file.)"
# Said after a video's summary when the caller passed image-only parameters.
IGNORED_FOR_VIDEO = " (region and full_resolution apply to images only: ignored for this video.)"


def _read_video(
    rp: ResolvedPath, fd: int, size: int, ft: FileType, env: ToolEnv, params: ReadMediaFileParams
) -> Outcome:
    note = IGNORED_FOR_VIDEO if params.region is not None or params.full_resolution else ""
    outcome = _fit_video(rp, fd, size, ft, env, len(note))
    outcome.message += note
    return outcome


def _fit_video(rp: ResolvedPath, fd: int, size: int, ft: FileType, env: ToolEnv, extra: int) -> Outcome:
    """The video, or frames of it, within the limits less ``extra`` characters said after it."""
    from filegate.media.image import b64_len
    from filegate.media.video import VideoInfo, av_installed, demuxer_for, extract_keyframes, probe_video

    limits = Limits.of(env)
    fits = replace(limits, total=limits.total - extra)
    uri = resource_uri(env.workspace, rp)
    skeleton = _video_outcome(rp, ft, _WIDE, _wide_info(), uri, b"")
    if b64_len(size) <= room_for(fits, skeleton):
        # A video that fits is sent whether or not FFmpeg can open it (SPEC §4: the optional
        # extra must not change the answer); the probe only adds what it finds.
        with holding(size):  # the file's room in the process's load budget, while it is held
            data = _read_all(fd, size)
            demuxer = demuxer_for(ft.mime)
            info = probe_video(fd, demuxer) if av_installed() and demuxer else VideoInfo()
            return checked_fit(_video_outcome(rp, ft, size, info, uri, data), fits)
    if not av_installed():
        raise PathError(
            f"`{rp.shown}` is a {ft.mime} video of {size} bytes ({b64_len(size)} characters as "
            f"base64), over this client's {limits.name} of {limits.chars} characters. Install the "
            f"video extra (`{VIDEO_EXTRA}`) to get evenly spaced frames instead, or pass a "
            "shorter or smaller clip.",
            "File too large",
        )
    room = room_for(fits, _frames_skeleton(rp, ft, limits))
    if limits.part is not None:
        room *= MAX_FRAMES  # each frame is a part of its own: it gets the part's room
    demuxer = demuxer_for(ft.mime)
    if demuxer is None:
        raise MediaError(f"this server samples no frames from {ft.mime} videos.")
    kf = extract_keyframes(fd, room, env.image_max_side, demuxer)
    if not kf.frames:
        raise MediaError("no frame could be decoded.")
    return checked_fit(_frames_outcome(rp, ft, size, kf, limits), fits)


def _frames_skeleton(rp: ResolvedPath, ft: FileType, limits: Limits) -> Outcome:
    from filegate.media.image import FittedImage
    from filegate.media.video import Keyframes, VideoFrame

    wide = FittedImage(b"", "image/jpeg", _WIDE, _WIDE, _WIDE, _WIDE, True)
    frames = [VideoFrame(_WIDE_FLOAT, wide) for _ in range(MAX_FRAMES)]
    return _frames_outcome(rp, ft, _WIDE, Keyframes(_wide_info(), frames), limits)


# --- the tool -----------------------------------------------------------------------------

Reader = Callable[[ResolvedPath, int, int, FileType, ToolEnv, ReadMediaFileParams], Outcome]


def _read(rp: ResolvedPath, env: ToolEnv, params: ReadMediaFileParams) -> Outcome:
    fd = open_regular(rp)
    ft: FileType | None = None
    try:
        st = os.fstat(fd)
        size = st.st_size
        _check_size(rp, size)
        header = pread(fd, SNIFF_BYTES, 0)
        if document_kind(rp.real.name, header) == "pdf":  # SPEC §8.6: its pages as images
            image_only = params.region is not None or params.full_resolution
            return read_pdf_pages(rp, fd, size, env, params.pages, IGNORED_FOR_PDF if image_only else "")
        ft = detect_file_type(rp.real.name, header)
        _check_media(rp, ft)
        reader: Reader = _read_image if ft.kind == "image" else _read_video
        if params.pages is not None:  # said after the summary, its room taken from the budget
            env = replace(env, result_budget=env.result_budget - len(PAGES_IGNORED))
        outcome = reader(rp, fd, size, ft, env, params)
        if params.pages is not None:
            outcome.message += PAGES_IGNORED
        if env.reads is not None:  # SPEC §4: a read of an image or video, for the read guard
            env.reads.saw(rp.real, identity_of(st))
        return outcome
    except MediaError as exc:
        assert ft is not None
        hint = _decode_hint(ft) if ft.kind == "image" else ""
        return Outcome.error(f"Failed to read `{rp.shown}` as {ft.kind} ({ft.mime}): {exc}{hint}")
    except OSError as exc:
        return Outcome.error(f"Failed to read {rp.shown}. Error: {exc.strerror or exc}")
    finally:
        os.close(fd)


async def read_media_file(params: ReadMediaFileParams, env: ToolEnv) -> Outcome:
    rp = env.workspace.resolve_for_read(params.path)
    return await anyio.to_thread.run_sync(_read, rp, env, params, abandon_on_cancel=True)


SPEC = ToolSpec(
    name="ReadMediaFile",
    title="Read image or video",
    description=load_description(
        "read_media",
        MAX_MEDIA_MB=MAX_MEDIA_MB,
        MAX_FRAMES=MAX_FRAMES,
        VIDEO_EXTRA=VIDEO_EXTRA,
        PDF_EXTRA=PDF_EXTRA,
    ),
    params=ReadMediaFileParams,
    handler=read_media_file,
    read_only=True,
)
