"""What WriteFile and StrReplaceFile share: load the target, ask, write atomically, log.

A tool holds ``PATH_LOCKS.hold(rp.real)`` around ``load_current`` … ``approve_and_replace`` so
that the bytes it changed are the bytes on disk when it writes (SPEC §4 stale-write check,
per-path serialisation).
"""

from __future__ import annotations

import codecs
import logging
import os
from dataclasses import dataclass

import anyio

from filegate.fsio.atomic import Snapshot, WriteError, read_all, replace_file, sha256_hex
from filegate.policy.workspace import PathError, ResolvedPath, open_regular, stat_target
from filegate.tools.diffing import Diff, unified_diff
from filegate.tools.outcome import Outcome, ToolEnv, WriteRequest

# An edit holds the old and the new bytes at once (plus the diff's slices); this bounds it.
MAX_FILE_BYTES = 128 << 20

# Every write is logged here (SPEC §6), whatever --log-level says: it is the audit trail.
audit = logging.getLogger("filegate.writes")
audit.setLevel(logging.INFO)

# Byte order marks, longest first (the UTF-32-LE mark starts with the UTF-16-LE one).
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass(frozen=True, slots=True)
class Encoding:
    """How a file's text is stored: the codec and the byte order mark it starts with."""

    codec: str = "utf-8"
    bom: bytes = b""

    @property
    def utf8(self) -> bool:
        return self.codec == "utf-8"

    def encode(self, text: str) -> bytes:
        """Text in this encoding (no BOM); a lone surrogate survives as it would on decode."""
        return text.encode(self.codec, "surrogatepass")


def detect_encoding(data: bytes) -> Encoding:
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return Encoding(codec, bom)
    return Encoding()


@dataclass(frozen=True, slots=True)
class Current:
    """The target as it is now: its bytes (None when it does not exist) and its snapshot."""

    data: bytes | None
    snapshot: Snapshot


def load_current(rp: ResolvedPath, *, must_exist: bool) -> Current:
    """Read the whole target (blocking: call in a thread). PathError/WriteError on failure."""
    if stat_target(rp) is None and not must_exist:
        return Current(None, Snapshot.absent())
    fd = open_regular(rp)  # "does not exist" / "is not a file" / no symlink swap
    try:
        data, snap = read_all(fd, MAX_FILE_BYTES, rp.shown)
    finally:
        os.close(fd)
    return Current(data, snap)


def count_lines(data: bytes, encoding: Encoding) -> int:
    if not data:
        return 0
    nl = encoding.encode("\n")
    return data.count(nl) + (0 if data.endswith(nl) else 1)


@dataclass(frozen=True, slots=True)
class Written:
    size: int
    created: bool
    diff: Diff
    route: str


async def approve_and_replace(
    tool: str,
    rp: ResolvedPath,
    env: ToolEnv,
    current: Current,
    new: bytes,
    *,
    encoding: Encoding,
    create_dirs: bool = False,
    notes: tuple[str, ...] = (),
) -> Written | Outcome:
    """Show the change, get the user's answer, write it atomically; an Outcome when refused."""
    # Diffing, hashing and counting a big file take a while: off the event loop, in one go.
    diff, request = await anyio.to_thread.run_sync(
        lambda: _describe(tool, rp, env, current, new, encoding, notes), abandon_on_cancel=True
    )
    decision = await env.approver.approve(request)
    if not decision.approved:
        return Outcome.error(decision.message, "Rejected by user")
    # Not abandoned on cancel: a write that started finishes (or fails) before the lock goes.
    size = await anyio.to_thread.run_sync(
        lambda: replace_file(rp.real, new, expect=current.snapshot, shown=rp.shown, create_dirs=create_dirs)
    )
    audit.info(
        "%s wrote %d bytes to %s (%s workspace, approval: %s)",
        tool,
        size,
        rp.real,
        "inside" if rp.inside else "outside",
        decision.route,
    )
    return Written(size, current.data is None, diff, decision.route)


def _describe(
    tool: str,
    rp: ResolvedPath,
    env: ToolEnv,
    current: Current,
    new: bytes,
    encoding: Encoding,
    notes: tuple[str, ...],
) -> tuple[Diff, WriteRequest]:
    """The diff and the request the user is asked about (blocking: call in a thread)."""
    old = current.data or b""
    diff = unified_diff(_shown_in_diff(rp, env), old, new, encoding.codec)
    request = WriteRequest(
        tool=tool,
        shown=env.workspace.display(rp.real) if rp.inside else str(rp.real),
        real=rp.real,
        inside=rp.inside,
        sensitive=rp.sensitive,
        old_hash=current.snapshot.sha256,
        new_hash=sha256_hex(new),
        old_size=len(old),
        new_size=len(new),
        old_lines=count_lines(old, encoding),
        new_lines=count_lines(new, encoding),
        diff=diff.text,
        created=current.data is None,
        notes=notes,
    )
    return diff, request


def _shown_in_diff(rp: ResolvedPath, env: ToolEnv) -> str:
    return env.workspace.display(rp.real) if rp.inside else str(rp.real)


def failure(exc: PathError | WriteError) -> Outcome:
    return Outcome.error(str(exc), exc.brief)


def lines_sentence(diff: Diff) -> str:
    """The short diff stat at the end of a success message."""
    return f" Lines: +{diff.added} -{diff.removed}."
