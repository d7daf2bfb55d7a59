"""A Jupyter notebook as ReadFile shows it (SPEC §8.6): cells, their sources and trimmed outputs.

The notebook is read with the standard library's ``json`` (no nbformat dependency: the view
needs a notebook's cells, sources and outputs, which nbformat 4 and 3 keep in plain JSON, and
json's C parser is the fastest thing to read them with). Parsing holds the whole file and its
parsed objects at once, so it takes room from the process-wide load budget
(``filegate.fsio.loads``) first, and a notebook over ``MAX_NOTEBOOK_BYTES`` is not parsed at
all: ReadFile shows it as its JSON text, which it reads in bounded memory like any text file.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from filegate.fsio.loads import holding
from filegate.fsio.platform import pread

# The largest notebook parsed into the cell view. The parse holds the file's bytes, the decoded
# text and the parsed strings at once (PARSE_COST_FACTOR × the file), and all of that must fit
# the load budget beside another call's load (fsio/loads.py MAX_LOAD_BYTES is 256 MiB).
MAX_NOTEBOOK_BYTES = 64 << 20
PARSE_COST_FACTOR = 3
# The file is read in pieces of at most this many bytes, joined once: no one read asks for
# more (os.pread allocates all it was asked for before it reads).
READ_CHUNK_BYTES = 8 << 20
# An output's text, at most: its first and last lines around a line that says how many were
# left out (a training loop's log must not push the next cells out of the window).
OUTPUT_HEAD_LINES = 10
OUTPUT_TAIL_LINES = 10
# A traceback's last lines shown under ``ename: evalue``: the frame that raised and its caller.
TRACEBACK_TAIL_LINES = 6
# Terminal colour and cursor codes (IPython colours its tracebacks with them).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")
# nbformat 3 keeps an output's data under short keys; these are its text ones.
_V3_RICH = ("png", "jpeg", "svg", "html", "latex", "javascript", "json", "pdf")


class NotANotebook(Exception):
    """The file is not notebook JSON that can be shown as cells; ``str(exc)`` says why."""


@dataclass(frozen=True, slots=True)
class CellRows:
    """Where one cell is in the view, as row indexes: its header row ``first``, its source
    lines ``first + 1`` to ``source_end`` (excluded), then its outputs up to ``end``."""

    first: int
    source_end: int
    end: int


@dataclass(frozen=True, slots=True)
class NotebookView:
    rows: list[str]  # the view's lines, each with its line break
    cells: int
    layout: tuple[CellRows, ...] = ()  # each cell's rows (an edit's refusals speak of them)


def read_notebook(fd: int, size: int) -> NotebookView:
    """The cell view of the notebook open at ``fd`` (``size`` bytes); NotANotebook when it is
    too large to parse, is not JSON, or is JSON of another shape."""
    if size > MAX_NOTEBOOK_BYTES:
        raise NotANotebook(
            f"it is larger than the {MAX_NOTEBOOK_BYTES / (1 << 20):g} MiB this server parses into cells"
        )
    with holding(size * PARSE_COST_FACTOR):
        data = _read_all(fd, size)
        try:
            notebook = json.loads(data)
        except (ValueError, RecursionError):
            raise NotANotebook("it is not valid JSON") from None
        del data
        return render_notebook(notebook)


def _read_all(fd: int, size: int) -> bytes:
    parts = []
    done = 0
    while done < size:
        chunk = pread(fd, min(size - done, READ_CHUNK_BYTES), done)
        if not chunk:
            break
        parts.append(chunk)
        done += len(chunk)
    return b"".join(parts)


def render_notebook(notebook: Any) -> NotebookView:
    """The view of parsed notebook JSON (nbformat 4, or 3's first worksheet)."""
    if not isinstance(notebook, dict):
        raise NotANotebook("its JSON is not a notebook (no object at the top)")
    version = notebook.get("nbformat")
    cells: Any
    if version == 4:
        cells = notebook.get("cells")
    elif version == 3:
        sheets = notebook.get("worksheets")
        cells = (
            sheets[0].get("cells")
            if isinstance(sheets, list) and sheets and isinstance(sheets[0], dict)
            else None
        )
    else:
        raise NotANotebook("its JSON is not a notebook of nbformat 4 or 3")
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise NotANotebook("its JSON has no list of cells")
    rows: list[str] = []
    layout: list[CellRows] = []
    for number, cell in enumerate(cells, 1):
        first = len(rows)
        rows.extend(_cell_rows(number, cell))
        source = len(_lines(cell.get("source", cell.get("input"))))
        layout.append(CellRows(first, first + 1 + source, len(rows)))
    return NotebookView(rows, len(cells), tuple(layout))


def _lines(value: Any) -> list[str]:
    """A multiline string as nbformat stores it (a string, or a list of strings), as lines."""
    text = "".join(v for v in value if isinstance(v, str)) if isinstance(value, list) else value
    if not isinstance(text, str) or not text:
        return []
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _cell_rows(number: int, cell: dict[str, Any]) -> list[str]:
    kind = str(cell.get("cell_type", "unknown"))
    outputs = cell.get("outputs") if kind == "code" else None
    outputs = outputs if isinstance(outputs, list) else []
    header = f"# cell {number} · {kind}"
    if kind == "code":
        header += f" · {len(outputs)} output{'' if len(outputs) == 1 else 's'}"
    if kind == "heading":  # nbformat 3
        header += f" · level {cell.get('level', 1)}"
    rows = [header]
    rows.extend(_lines(cell.get("source", cell.get("input"))))
    for index, output in enumerate(outputs, 1):
        if isinstance(output, dict):
            rows.extend(_output_rows(index, output))
    return [_ANSI.sub("", r) + "\n" for r in rows]


def _output_rows(index: int, output: dict[str, Any]) -> list[str]:
    kind = str(output.get("output_type", "unknown"))
    if kind == "stream":
        name = output.get("name", output.get("stream", "stdout"))
        return [f"# out {index} · {name}", *_trimmed(_lines(output.get("text")))]
    if kind in ("error", "pyerr"):
        return _error_rows(index, output)
    # execute_result / display_data (nbformat 4: under "data"; 3: pyout's keys beside it)
    bundle = output.get("data")
    if isinstance(bundle, dict):  # nbformat 4: a MIME bundle
        text = bundle.get("text/plain")
        rich = [str(k) for k in bundle if k != "text/plain"]
    else:  # nbformat 3: short keys beside output_type
        text = output.get("text")
        rich = [k for k in _V3_RICH if k in output]
    rows = [f"# out {index} · {kind}"]
    rows.extend(_trimmed(_lines(text)))
    rows.extend(f"[{mime} output not shown]" for mime in rich)
    return rows


def _error_rows(index: int, output: dict[str, Any]) -> list[str]:
    trace = output.get("traceback")
    lines = (
        [line for entry in trace if isinstance(entry, str) for line in _lines(entry)]
        if isinstance(trace, list)
        else []
    )
    lines = [_ANSI.sub("", line) for line in lines]
    while lines and not lines[-1].strip():
        lines.pop()
    rows = [f"# out {index} · error", f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
    if len(lines) > TRACEBACK_TAIL_LINES:
        rows.append(f"… traceback: {len(lines) - TRACEBACK_TAIL_LINES} earlier lines left out …")
    rows.extend(lines[-TRACEBACK_TAIL_LINES:])
    return rows


def _trimmed(lines: list[str]) -> list[str]:
    if len(lines) <= OUTPUT_HEAD_LINES + OUTPUT_TAIL_LINES:
        return lines
    left_out = len(lines) - OUTPUT_HEAD_LINES - OUTPUT_TAIL_LINES
    return [
        *lines[:OUTPUT_HEAD_LINES],
        f"… {left_out} lines of output left out …",
        *lines[-OUTPUT_TAIL_LINES:],
    ]
