"""Grep's output parsing: rg's records → results in Kimi's formats (SPEC §4 Grep), the files
that may hold secrets dropped, ordered, then paged and fitted to the client's budget."""

from __future__ import annotations

import functools
import itertools
import os
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from filegate.fsio import platform
from filegate.policy.escape import escape, escape_text, has_unsafe_text
from filegate.tools.grep.params import MAX_LINE_CHARS, GrepParams, Target
from filegate.tools.outcome import ToolEnv

# rg's --context-separator (given as "\x00"): the row between two groups of context lines.
CONTEXT_SEP = b"\0"
# rg's name for standard input, where a single file is searched from an fd opened here.
RG_STDIN = b"<stdin>"
# The end of a line cut to MAX_LINE_CHARS.
TRUNCATED = "[...truncated]"


def _cut_line(line: str) -> str:
    """A line over MAX_LINE_CHARS cut so that it is MAX_LINE_CHARS long, marker included
    (Kimi's ToolResultBuilder cuts so)."""
    if len(line) <= MAX_LINE_CHARS:
        return line
    return line[: MAX_LINE_CHARS - len(TRUNCATED)] + TRUNCATED


# A content row that stands between two groups of context lines ("--" when shown).
_GROUP_BREAK = None
# (shown path, rg's "LINE:text" / "LINE-text"), a line said whole, or a group break.
_Row = tuple[str, bytes] | str | None


@dataclass
class Parsed:
    """The search's results in their final, stable order; content rows formatted only when shown."""

    rows: list[_Row] | None = None  # content mode
    lines: list[str] = field(default_factory=list)  # the other modes
    skipped: list[str] = field(default_factory=list)  # names of the files that may hold secrets
    hidden: int = 0  # files a client rule hides, left out (counted, never named: SPEC §8.5)
    rule_sources: list[str] = field(default_factory=list)  # client rule files that hid some (shown)
    total_matches: int | None = None
    files: int | None = None

    @property
    def total(self) -> int:
        return len(self.rows) if self.rows is not None else len(self.lines)


class Parser:
    """rg's output → results (Kimi's formats, SPEC §4 Grep), fed in order as it arrives.

    Every record starts with a file name that ends at the first NUL: a name is never split at a
    line break, so a name holding "\\n" cannot attribute text to another file. A name goes
    through :func:`escape` (undecodable bytes as ``\\xNN``, which the resolver takes back).
    """

    def __init__(self, params: GrepParams, target: Target, env: ToolEnv) -> None:
        self.params, self.target = params, target
        self.mode = params.output_mode
        self.sep = b"\0" if self.mode == "files_with_matches" else b"\n"
        self.fed = 0  # chunks consumed so far
        self.fed_bytes = 0
        self.rest = bytearray()
        self.pending = b""  # the first part of a name that holds a line break
        self.dated: list[tuple[int, str]] = []  # files_with_matches: (-mtime_ns, shown path)
        self.counts: list[tuple[str, int]] = []
        self.blocks: dict[str, list[_Row]] = {}  # content: shown path → its rows
        self.block: list[_Row] | None = None  # the rows of the file being read
        self.block_path: bytes | None = None
        self.block_shown = ""  # its shown path
        base = str(target.cwd)
        secrets = env.workspace.secrets
        prefix = target.prefix

        # os.fsdecode's own steps, bound once: it runs for every file rg names.
        encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
        is_sensitive = secrets.is_sensitive

        # Not cached: each name comes once (content rows ask once per file, see _rows).
        def path_of(raw: bytes) -> tuple[str, bool]:
            """A name as rg printed it → (shown path, sensitive)."""
            if target.single_file and raw == RG_STDIN:
                return target.name, target.sensitive  # shown by the workspace: escaped once
            rel = (raw[2:] if raw.startswith(b"./") else raw).decode(encoding, errors)
            return prefix + escape(rel), is_sensitive(f"{base}/{rel}")  # the prefix is escaped

        self.path_of = path_of

    def feed_from(self, chunks: list[bytes]) -> None:
        """Parse the chunks not parsed yet (a worker thread; never two at once)."""
        end = len(chunks)
        if self.fed == end:
            return
        self.rest += b"".join(chunks[self.fed : end])
        for i in range(self.fed, end):
            self.fed_bytes += len(chunks[i])
            chunks[i] = b""  # parsed: no need to hold it twice
        self.fed = end
        cut = self.rest.rfind(self.sep)
        if cut >= 0:
            block = bytes(self.rest[: cut + 1])
            del self.rest[: cut + 1]
            self._records(block.split(self.sep)[:-1])

    def finish(self, chunks: list[bytes], overflow: bool) -> Parsed:
        self.feed_from(chunks)
        if self.rest and not overflow:  # no last separator; cut off on overflow
            self._records([bytes(self.rest)])
        self.rest.clear()
        if self.pending:
            self._said_whole(self.pending)
        if self.mode == "files_with_matches":
            self.dated.sort()  # newest first, ties by path
            return Parsed(lines=[p for _, p in self.dated])
        if self.mode == "count_matches":
            self.counts.sort()
            total = sum(n for _, n in self.counts)
            return Parsed(
                lines=[f"{p}:{n}" for p, n in self.counts], total_matches=total, files=len(self.counts)
            )
        return Parsed(rows=self._ordered_rows())

    def _said_whole(self, row: bytes) -> None:
        """A row without a NUL at the end of the output: rg's "binary file matches" note on a
        file searched alone (a directory search skips binary files without a word)."""
        # Only a file searched alone is "<stdin>": a directory search's names start with "./".
        if not row.startswith(RG_STDIN + b": "):
            return
        # Below, a file that may hold secrets and that rg printed all the same (a tree's `!`
        # rule took it back in, or the walk ran out of time) is dropped and not counted, since
        # counting it would tell that it matched; the files left out are counted from the walk.
        shown, sensitive = self.path_of(RG_STDIN)
        if not sensitive and self.mode == "content":
            note = escape_text(row[len(RG_STDIN) + 2 :].decode("utf-8", errors="replace"))
            self.blocks.setdefault(shown, []).append(f"{shown}: {note}")

    def _ordered_rows(self) -> list[_Row]:
        """Files by path, lines in file order; with context, "--" between files as rg does."""
        rows: list[_Row] = []
        between = any(v is not None for v in (self.params.before_context, self.params.after_context,
                                              self.params.context))  # fmt: skip
        for path in sorted(self.blocks):
            block = self.blocks[path]
            # A block starts with a row (rg's separator ends the group before it): only its end
            # can be a separator.
            while block and block[-1] is None:
                block.pop()
            if not block:
                continue
            if rows and between:
                rows.append(_GROUP_BREAK)
            rows.extend(block)  # rows made whole while rg ran (_rows)
        return rows

    def _records(self, records: list[bytes]) -> None:
        if self.mode == "files_with_matches":
            self._paths(records)
        else:
            self._rows(records)

    def _paths(self, records: list[bytes]) -> None:
        target, path_of, dated = self.target, self.path_of, self.dated.append
        if target.single_file:
            for raw in records:
                if raw:
                    shown, sensitive = path_of(raw)
                    if not sensitive:  # dropped, not counted (see _said_whole)
                        dated((-os.fstat(target.fd).st_mtime_ns, shown))  # the file rg read
            return
        # This loop runs for every matching file (11,063 on the kernel).
        fd: int | None = target.fd
        lstat = os.stat
        if not platform.has_dir_fd():  # Windows: by path (the pinned directory cannot move there)
            fd, lstat = None, functools.partial(_stat_in, os.fsencode(target.cwd))
        for raw in records:
            if not raw:
                continue
            shown, sensitive = path_of(raw)
            if sensitive:
                continue
            try:
                mtime = lstat(raw, dir_fd=fd).st_mtime_ns  # in the pinned directory rg searched
            except OSError:
                mtime = 0
            dated((-mtime, shown))

    def _rows(self, rows: list[bytes]) -> None:
        counting = self.mode == "count_matches"
        for row in rows:
            if self.pending:  # the rest of a name that holds a line break
                row = self.pending + b"\n" + row
                self.pending = b""
            if row == CONTEXT_SEP:
                if self.block and self.block[-1] is not None:
                    self.block.append(None)
                continue
            raw, nul, rest = row.partition(b"\0")
            if not nul:
                self.pending = row  # a name cut by its own line break: the record goes on
                continue
            if counting:
                shown, sensitive = self.path_of(raw)
                if not sensitive:
                    self.counts.append((shown, int(rest or b"0")))
                continue
            if raw != self.block_path:
                self.block_path = raw
                shown, sensitive = self.path_of(raw)
                if sensitive:
                    self.block = None
                else:
                    self.block_shown = shown
                    self.block = self.blocks.setdefault(shown, [])
                    if self.block and self.block[-1] is not None:
                        self.block.append(None)  # the same file again (never seen from rg)
            if self.block is not None:
                self.block.append((self.block_shown, rest))


def _format_row(row: _Row, numbered: bool) -> str:
    if row is None:
        return "--"
    if isinstance(row, str):
        return row
    path, raw = row
    text = raw.decode("utf-8", errors="replace")
    digits = len(text) - len(text.lstrip("0123456789"))
    number, sep, body = text[:digits], text[digits : digits + 1], text[digits + 1 :]
    if body.endswith("\r"):  # a CRLF file's line end
        body = body[:-1]
    if has_unsafe_text(body):  # a CR, an escape sequence, a bidi override: shown escaped
        body = escape_text(body)
    if numbered and number:
        return f"{path}{sep}{number}{sep}{body}"
    return f"{path}{sep}{body}"


def _stat_in(top: bytes, raw: bytes, dir_fd: None = None) -> os.stat_result:
    """``os.stat(raw, dir_fd=…)`` where there is no ``dir_fd`` (Windows): by the path of the
    searched directory, which its open handle keeps from being moved or replaced there."""
    return os.stat(os.path.join(top, raw))


def page_lines(parsed: Parsed, params: GrepParams) -> tuple[Iterator[str], int]:
    """The page asked for (offset, then head_limit): its lines, formatted as they are taken
    (a page of all 500,000 rows is formatted only as far as the output has room), and its length."""
    # Clamped to the results first: a JSON integer has no bound, islice's indices do
    # (offset=2**63-1 with a head_limit raised ValueError).
    total = parsed.total
    start = min(params.offset, total)
    end = min(params.offset + params.head_limit, total) if params.head_limit else total
    if parsed.rows is None:
        page = parsed.lines[start:end]
        return iter(page), len(page)
    rows = itertools.islice(parsed.rows, start, end)
    length = end - start
    return (_format_row(r, params.line_number) for r in rows), length


def fit_lines(lines: Iterable[str], room: int) -> tuple[list[str], bool]:
    """Whole lines (each cut to 2000 characters, marker included) while they fit in ``room``
    characters, and whether any of them was cut."""
    out: list[str] = []
    used = -1  # n lines take n - 1 line breaks
    cut_any = False
    for whole in lines:
        line = _cut_line(whole)
        if used + len(line) + 1 > room:
            break
        cut_any = cut_any or line is not whole
        out.append(line)
        used += len(line) + 1
    return out, cut_any
