"""What every real-agent test shares: the workspace, the script, a scratch HOME, the runs."""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests import pdf_factory
from tests.agents import installs
from tests.agents.model import Recorder, Seen, Step

RUN_S = 240.0  # hang guard on one agent run (its start-up, seven turns, filegate's start-up)
DISTINCTIVE = "the heron flies at 7731 hours"
GREP_LINE = "SIGNAL = 'grep-target-5521'"
CANARY = "canary-ZX81-d0n0tleak"
WRITTEN = "written by the agent\n"
NOTES = f"first line\nsecond line\n{DISTINCTIVE}\nlast line\n"

# One call per turn, in this order; a result's position in the conversation names its step.
READ, GLOB, GREP, ENV, MEDIA, WRITE, EDIT = range(7)
STEPS = [
    Step("ReadFile", {"path": "notes.txt"}),
    Step("Glob", {"pattern": "**/*.py"}),
    Step("Grep", {"pattern": "grep-target-[0-9]+", "output_mode": "content"}),
    Step("ReadFile", {"path": ".env"}),
    Step("ReadMediaFile", {"path": "pic.png"}),
    Step("WriteFile", {"path": "new.txt", "content": WRITTEN}),
    Step("StrReplaceFile", {"path": "notes.txt", "edit": {"old": "heron", "new": "crane"}}),
]
# An unattended run's writes: the edited file is read first (the read guard, SPEC §4).
WRITE_STEPS = [STEPS[READ], *STEPS[WRITE:]]

# A tab-indented Go file, and the edit a model typically sends for it: the lines it read,
# indented with 4 spaces a level (SPEC §8.2, the ladder's indentation rung).
GO_FILE = (
    'package main\n\nimport "fmt"\n\n'
    "func greet(name string) string {\n"
    '\tif name == "" {\n\t\treturn "hello, world"\n\t}\n'
    '\treturn "hello, " + name\n}\n\n'
    'func main() {\n\tfmt.Println(greet(""))\n}\n'
)
GO_OLD = '    if name == "" {\n        return "hello, world"\n    }\n'
GO_NEW = '    if name == "" {\n        name = "world"\n    }\n'
GO_EDITED = GO_FILE.replace('\t\treturn "hello, world"', '\t\tname = "world"')
GO_REPORT = (
    "matched ignoring indentation at lines 6-8: the file indents with tabs, the old text with"
    " 4 spaces; the new text was written with tabs."
)
LADDER_STEPS = [
    Step("ReadFile", {"path": "main.go"}),
    Step("StrReplaceFile", {"path": "main.go", "edit": {"old": GO_OLD, "new": GO_NEW}}),
]
LADDER_EDIT = 1

WRITE_ID = re.compile(r"Write id: (w-[0-9a-f]+)\.")


def undo_args(received: list[Seen]) -> dict[str, str]:
    """UndoWrite of the write the model was just told about, by the id its message ended with."""
    found = WRITE_ID.search(received[UNDONE].text)
    assert found, f"no write id in what the model received: {received[UNDONE].text[:2000]}"
    return {"write_id": found.group(1)}


# A write, then its undo by the id the model received from it.
UNDO_STEPS = [STEPS[READ], STEPS[EDIT], Step("UndoWrite", undo_args)]
UNDONE, UNDO = 1, 2

# ApplyPatch (SPEC §10): three files read, one set changing them (an edit, a move with an edit,
# a new file in a new folder), then its undo by the set's id. Codex's model writes the V4A
# envelope; Claude Code's the `changes` list.
PATCH_V4A = """*** Begin Patch
*** Update File: notes.txt
@@
 second line
-the heron flies at 7731 hours
+the crane flies at 7731 hours
*** Update File: src/a.py
*** Move to: src/b.py
@@
 import os
-SIGNAL = 'grep-target-5521'
+SIGNAL = 'moved-5521'
*** Add File: docs/added.md
+# Added by a set
*** End Patch
"""
PATCH_CHANGES = [
    {"path": "notes.txt", "edits": [{"old": "heron", "new": "crane"}]},
    {"path": "src/a.py", "move_to": "src/b.py", "edits": [{"old": "grep-target", "new": "moved"}]},
    {"path": "docs/added.md", "content": "# Added by a set\n"},
]
PATCHED, PATCH_UNDO = 3, 4


def patch_undo_args(received: list[Seen]) -> dict[str, str]:
    found = WRITE_ID.search(received[PATCHED].text)
    assert found, f"no write id in what the model received: {received[PATCHED].text[:2000]}"
    return {"write_id": found.group(1)}


def patch_steps(args: dict[str, Any]) -> list[Step]:
    reads = [Step("ReadFile", {"path": p}) for p in ("notes.txt", "src/a.py", "main.go")]
    return [*reads, Step("ApplyPatch", args), Step("UndoWrite", patch_undo_args)]


# The rewind and the review (SPEC §10): three writes (a new file, an edit, a new file in a
# folder), Changes since the first, then UndoWrite since the first.
def since_first(received: list[Seen]) -> dict[str, str]:
    found = WRITE_ID.search(received[FIRST_WRITE].text)
    assert found, f"no write id in what the model received: {received[FIRST_WRITE].text[:2000]}"
    return {"since": found.group(1)}


REWIND_STEPS = [
    Step("WriteFile", {"path": "one.txt", "content": "one\n"}),
    Step("ReadFile", {"path": "notes.txt"}),
    Step("StrReplaceFile", {"path": "notes.txt", "edit": {"old": "heron", "new": "crane"}}),
    Step("WriteFile", {"path": "src/two.py", "content": "TWO = 2\n"}),
    Step("Changes", since_first),
    Step("UndoWrite", since_first),
]
FIRST_WRITE, REVIEWED, REWOUND = 0, 4, 5


def png(width: int, height: int, noise: bool = False) -> bytes:
    """A real PNG (RGBA); ``noise`` makes it incompressible (its size ~ 4 bytes a pixel)."""
    n = width * 4
    row = bytes(range(256)) * (n // 256) + bytes(n % 256)
    raw = b"".join(b"\x00" + (os.urandom(n) if noise else row) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(raw, 1))
        + chunk(b"IEND", b"")
    )


# Documents (SPEC §8.6): a notebook read as its cells, and one page of a PDF.
NOTEBOOK_PROSE = "The heron notebook counts 4417 birds."
NOTEBOOK_CODE = "ratio = herons / 0"
# IPython colours its tracebacks: the codes must not reach the model.
RED, GREEN, RESET = "\x1b[0;31m", "\x1b[0;32m", "\x1b[0m"
NOTEBOOK_ERROR = "ZeroDivisionError: division by zero"
# An image output: its base64 (of a PNG that does not compress) must not reach the model.
NOTEBOOK_PNG = base64.b64encode(png(40, 40, noise=True)).decode()
PDF_PAGES = [
    ["Page one: the lowland survey", "marker-P1-lowland"],
    ["Page two: the upland survey", "marker-P2-upland"],
    ["Page three: the coastal survey", "marker-P3-coastal"],
]
READ_NOTEBOOK, READ_PDF_PAGE = range(2)
DOCUMENT_STEPS = [
    Step("ReadFile", {"path": "survey.ipynb"}),
    Step("ReadFile", {"path": "survey.pdf", "pages": "2"}),
]


def code_cell(source: str, *outputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": 1,
        "metadata": {},
        "source": source,
        "outputs": list(outputs),
    }


def notebook() -> str:
    """A real nbformat 4 notebook: prose, code, an output, an error with a coloured traceback,
    and an image output."""
    traceback = [
        f"{RED}---------------------------------------------------------------------------{RESET}",
        f"{RED}ZeroDivisionError{RESET}                         Traceback (most recent call last)",
        f"Cell {GREEN}In[2], line 1{RESET}\n{GREEN}----> 1{RESET} ratio {RED}={RESET} herons {RED}/{RESET} 0",
        f"{RED}ZeroDivisionError{RESET}: division by zero",
    ]
    error = {"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
             "traceback": traceback}  # fmt: skip
    image = {"output_type": "display_data", "metadata": {},
             "data": {"image/png": NOTEBOOK_PNG, "text/plain": ["<Figure size 40x40>"]}}  # fmt: skip
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Survey\n", NOTEBOOK_PROSE]},
        code_cell(
            "herons = 4417\nprint(herons)", {"output_type": "stream", "name": "stdout", "text": ["4417\n"]}
        ),
        code_cell(NOTEBOOK_CODE, error),
        code_cell("plot(herons)", image),
    ]
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"name": "python3"}}, "cells": cells}
    return json.dumps(nb, indent=1)


# SPEC §9's large results (tests/agents/test_reach.py): a file of 1,200 lines of 80 characters
# read without a window, a Grep over 4,000 matching lines with no head_limit (at its cap), and
# an edit whose old text is found nowhere in a file of long lines (the closest region shown).
BIG_LINES, WIDE_LINES = 1200, 200


def big_line(i: int) -> str:
    return f"line {i:04d} " + ("abcdefghij" * 8)[:70]  # 80 characters


def wide_line(i: int) -> str:
    return f"line {i:04d} " + ("abcdefghij" * 200)[:1990]  # 2,000 characters


def corpus_line(k: int, i: int) -> str:
    return f"MARK_{k}_{i} = 'reach-mark-{k:02d}{i:03d}'  # padding padding padding"


REACH_MISS = "".join(wide_line(i).replace("abc", "abd") + "\n" for i in range(100, 140))
READ_BIG, GREP_CAP, READ_WIDE, MISS = range(4)
REACH_STEPS = [
    Step("ReadFile", {"path": "big.txt"}),
    Step(
        "Grep", {"pattern": "reach-mark-[0-9]+", "path": "corpus", "output_mode": "content", "head_limit": 0}
    ),
    Step("ReadFile", {"path": "wide.txt", "n_lines": 1}),
    Step("StrReplaceFile", {"path": "wide.txt", "edit": {"old": REACH_MISS, "new": "changed"}}),
]


def workspace(root: Path, image: bytes | None = None) -> Path:
    ws = root / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "big.txt").write_text("".join(big_line(i) + "\n" for i in range(1, BIG_LINES + 1)))
    (ws / "wide.txt").write_text("".join(wide_line(i) + "\n" for i in range(1, WIDE_LINES + 1)))
    (ws / "corpus").mkdir()
    for k in range(40):
        (ws / "corpus" / f"m{k:02d}.txt").write_text("".join(corpus_line(k, i) + "\n" for i in range(100)))
    (ws / "notes.txt").write_text(NOTES)
    (ws / "src" / "a.py").write_text(f"import os\n{GREP_LINE}\n")
    (ws / ".env").write_text(f"API_KEY={CANARY}\n")
    (ws / "main.go").write_text(GO_FILE)
    (ws / "pic.png").write_bytes(image if image is not None else png(64, 48))
    (ws / "survey.ipynb").write_text(notebook())
    pdf_factory.write_text_pdf(ws / "survey.pdf", list(PDF_PAGES), flate=True)
    return ws


def scratch_env(home: Path, **extra: str) -> dict[str, str]:
    """A scratch HOME and XDG dirs; nothing of the user's agents' settings or keys leaks in."""
    for d in ("config", "data", "cache", "state"):
        (home / f".xdg-{d}").mkdir(parents=True, exist_ok=True)
    drop = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "KIMI_", "FILEGATE_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop) and k != "CI"}
    env |= {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".xdg-config"),
        "XDG_DATA_HOME": str(home / ".xdg-data"),
        "XDG_CACHE_HOME": str(home / ".xdg-cache"),
        "XDG_STATE_HOME": str(home / ".xdg-state"),
        "NO_COLOR": "1",
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    return env | extra


def filegate() -> str:
    exe = Path(sys.executable).parent / "filegate"
    return str(exe) if exe.exists() else shutil.which("filegate") or "filegate"


@functools.cache
def compile_filegate() -> None:
    """filegate's bytecode written as an install writes it (pip compiles a wheel's modules; a
    first start writes what it compiled). Under PYTHONDONTWRITEBYTECODE, as on the project's
    machines, a checkout's modules changed since their last compile were compiled again at
    every start an agent made: with none compiled, ~0.19 s more CPU of a ~0.85 s start
    (docs/MCP-SDK-IMPORT.md), which a user's install pays once at most."""
    import compileall

    import filegate

    compileall.compile_dir(Path(filegate.__file__).parent, quiet=1)


def logging_filegate(folder: Path, log: Path) -> str:
    """A ``filegate`` command that appends its stderr to ``log``; installed through it, the
    client's entry runs it, so ``log`` holds what filegate logged (at ``--log-level INFO``, the
    ``client NAME VERSION connected`` line: the clientInfo the agent really sends)."""
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "filegate"
    script.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        f"os.dup2(os.open({str(log)!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), 2)\n"
        "from filegate.cli import main\nsys.exit(main())\n"
    )
    script.chmod(0o755)
    return str(script)


CONNECTED = re.compile(r"client (.+?) (\S+) connected \(protocol")


# A write's log line names the client too (a 2026-07-28 client has no handshake to log).
WRITE_CLIENT = re.compile(r"filegate\.writes: .*?; client: ([^;\n]+?)(?:; error:|\n|$)", re.M)


def client_names(log: Path) -> list[tuple[str, str]]:
    """The clientInfo (name, version) filegate logged connecting (see :func:`logging_filegate`),
    else the names its write log lines give (with no version)."""
    text = log.read_text() if log.exists() else ""
    return CONNECTED.findall(text) or [(name, "") for name in WRITE_CLIENT.findall(text)]


def install(client: str, env: dict[str, str], cwd: Path, *flags: str, exe: str | None = None) -> str:
    """``filegate install CLIENT`` exactly as a user runs it, into the scratch HOME; filegate's
    bytecode compiled first, as the user's install compiled it."""
    compile_filegate()
    proc = subprocess.run(
        [exe or filegate(), "install", client, *flags],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=RUN_S, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"{argv[0]} did not finish in {RUN_S} s: {exc.stderr!r:.3000}") from None


def need(name: str, version: str | None = None) -> installs.Agent:
    """The pinned agent (or ``version`` of it); a skip saying why it cannot be had, or a
    failure under CI."""
    try:
        return installs.AGENTS[name](*([version] if version else []))
    except installs.Unavailable as exc:
        if os.environ.get("CI"):
            pytest.fail(f"{name} could not be installed: {exc}")
        pytest.skip(f"{name} could not be installed: {exc}")


@dataclass
class Run:
    rec: Recorder
    proc: subprocess.CompletedProcess[str]
    ws: Path
    log: Path | None = None  # filegate's stderr (logging_filegate), when it was kept

    def seen(self, step: int) -> Seen:
        got = self.rec.results
        assert len(got) > step, (
            f"the model got {len(got)} tool results of {len(self.rec.steps)}; tools listed: "
            f"{self.rec.tool_names}; exit {self.proc.returncode}; stderr: {self.proc.stderr[-2000:]}"
            f"; stdout: {self.proc.stdout[-2000:]}"
        )
        return got[step]


# --- what the model must have received -----------------------------------------------------


def check_read(seen: Seen) -> None:
    assert re.search(rf"(^|\n)\s*3\t{re.escape(DISTINCTIVE)}", seen.text), seen.text[:2000]


def check_glob(seen: Seen) -> None:
    assert "src/a.py" in seen.text, seen.text[:2000]


def check_grep(seen: Seen) -> None:
    assert GREP_LINE in seen.text, seen.text[:2000]


def check_env_refused(r: Run) -> None:
    seen = r.seen(ENV)
    assert "secret" in seen.text.lower() or "sensitive" in seen.text.lower(), seen.text[:2000]
    assert CANARY.encode() not in r.rec.all_bytes()  # in no request at all, not only this result


def check_image(r: Run) -> None:
    seen = r.seen(MEDIA)
    assert seen.images, f"no image reached the model; it got: {seen.text[:1000]}"
    assert seen.images[0][:8] == b"\x89PNG\r\n\x1a\n" or seen.images[0][:3] == b"\xff\xd8\xff", seen.images[
        0
    ][:16]


def check_written(r: Run, first: int = 0, told: bool = True) -> None:
    """The two writes (steps ``first`` and ``first + 1``) done, and (``told``) the model told so."""
    assert (r.ws / "new.txt").read_text() == WRITTEN, r.seen(first).text
    assert "crane flies" in (r.ws / "notes.txt").read_text(), r.seen(first + 1).text
    # A new file's message is "Created `new.txt`. …", an edit's Kimi's "… successfully edited …".
    for step, said in ((first, "Created `new.txt`."), (first + 1, "successfully")):
        seen = r.seen(step)
        assert not seen.error, seen.text
        if told:
            assert said in seen.text, seen.text


def check_ladder_edit(r: Run) -> None:
    """The space-indented edit landed on the first try, in tabs, and the model got the report."""
    seen = r.seen(LADDER_EDIT)
    assert not seen.error, seen.text
    assert (r.ws / "main.go").read_text() == GO_EDITED, seen.text
    assert GO_REPORT in seen.text, seen.text


def check_undone(r: Run) -> None:
    """The edit happened, its undo put the file back byte for byte, and the model was told."""
    edited, undone = r.seen(UNDONE), r.seen(UNDO)
    assert not edited.error and "successfully" in edited.text, edited.text
    assert not undone.error, undone.text
    write_id = undo_args(r.rec.results)["write_id"]
    assert f"Undid {write_id}: `notes.txt` restored as it was before it." in undone.text, undone.text
    assert WRITE_ID.search(undone.text), undone.text  # the undo is itself a write, undoable
    assert (r.ws / "notes.txt").read_bytes() == NOTES.encode()


def check_patched_and_undone(r: Run) -> None:
    """The set landed whole (the model told each file and one id); its undo put all three
    files back as they were (the moved one at its old name, the new one gone)."""
    patched, undone = r.seen(PATCHED), r.seen(PATCH_UNDO)
    assert not patched.error, patched.text
    assert "Applied 3 file changes as one write." in patched.text, patched.text
    for line in ("- modified `notes.txt`", "- moved `src/a.py` → `src/b.py`", "- added `docs/added.md`"):
        assert line in patched.text, patched.text
    set_id = patch_undo_args(r.rec.results)["write_id"]
    assert not undone.error, undone.text
    assert f"Undid {set_id}: 4 files as they were before it." in undone.text, undone.text
    assert (r.ws / "notes.txt").read_text() == NOTES
    assert (r.ws / "src" / "a.py").read_text() == f"import os\n{GREP_LINE}\n"
    assert not (r.ws / "src" / "b.py").exists() and not (r.ws / "docs" / "added.md").exists()


def check_notebook(r: Run) -> None:
    """The model got the notebook's cells (headers, sources, the error's last line), without
    the traceback's colour codes or the image's base64."""
    seen = r.seen(READ_NOTEBOOK)
    assert not seen.error, seen.text[:2000]
    for cell in (
        "# cell 1 · markdown",
        "# cell 2 · code · 1 output",
        "# cell 3 · code · 1 output",
        "# cell 4 · code · 1 output",
    ):
        assert cell in seen.text, seen.text[:3000]
    for shown in (NOTEBOOK_PROSE, NOTEBOOK_CODE, NOTEBOOK_ERROR, "[image/png output not shown]"):
        assert shown in seen.text, seen.text[:3000]
    assert "Notebook view of 4 cells" in seen.text, seen.text[-1000:]
    assert "\x1b" not in seen.text and "[0;31m" not in seen.text, repr(seen.text[:3000])
    # Not in this result, nor anywhere the agent sent its model.
    assert NOTEBOOK_PNG[:64].encode() not in r.rec.all_bytes(), seen.text[:3000]


def check_pdf_page(r: Run) -> None:
    """The model got page 2's text under its marker, and nothing of pages 1 and 3."""
    seen = r.seen(READ_PDF_PAGE)
    assert not seen.error, seen.text[:2000]
    assert re.search(r"(^|\n)\s*1\t--- page 2 ---\n", seen.text), seen.text[:2000]
    for line in PDF_PAGES[1]:
        assert line in seen.text, seen.text[:2000]
    for other in (*PDF_PAGES[0], *PDF_PAGES[2], "--- page 1 ---", "--- page 3 ---"):
        assert other not in seen.text, seen.text[:2000]
    assert "PDF view of page 2 of 3" in seen.text, seen.text[-1000:]


def check_reviewed_and_rewound(r: Run) -> None:
    """Changes showed the model the three files it wrote, with the edit's diff; UndoWrite since
    the first write put all three back as they were (the new files gone)."""
    reviewed, rewound = r.seen(REVIEWED), r.seen(REWOUND)
    first = since_first(r.rec.results)["since"]
    assert not reviewed.error, reviewed.text
    for row in ("added `one.txt`", "modified `notes.txt`", "added `src/two.py`"):
        assert row in reviewed.text, reviewed.text
    assert f"-{DISTINCTIVE}" in reviewed.text and "+the crane flies" in reviewed.text, reviewed.text
    assert f"3 files inside this workspace written through filegate since {first}" in reviewed.text
    assert not rewound.error, rewound.text
    assert f"Rewound 3 writes from {first}" in rewound.text, rewound.text
    assert "3 files as they were before it" in rewound.text, rewound.text
    assert (r.ws / "notes.txt").read_text() == NOTES
    assert not (r.ws / "one.txt").exists() and not (r.ws / "src" / "two.py").exists()
