"""Client rules and Unicode normalisation (SPEC §8.5, issue 53 item 7): a name typed in one
normal form in a rule file hides a file stored in the other, as the secret list does (SPEC
§2.6: "after Unicode NFC normalisation of both pattern and path").

Real files on a file system that keeps the bytes of a name (ext4 does not normalise: an NFD name
stays NFD, as archives made on macOS leave them), through a real client: ReadFile, Grep and Glob.
"""

from __future__ import annotations

import json
import os
import unicodedata
from pathlib import Path

import pytest

from tests.conftest import call, connect, text

CANARY = "Qz7-NFC-CANARY"
NFC_NAME = unicodedata.normalize("NFC", "café-notes.txt")
NFD_NAME = unicodedata.normalize("NFD", "café-notes.txt")
NFC_DIR = unicodedata.normalize("NFC", "naïve")
NFD_DIR = unicodedata.normalize("NFD", "naïve")
assert NFC_NAME != NFD_NAME and NFC_DIR != NFD_DIR


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = Path(os.path.realpath(tmp_path)) / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    return h


def keeps_names(folder: Path) -> None:
    """The test means something only where the file system keeps an NFD name as written."""
    probe = folder / NFD_NAME
    probe.write_text("x")
    kept = NFD_NAME in os.listdir(folder)
    probe.unlink()
    if not kept:
        pytest.skip("this file system normalises names (APFS/HFS+): both forms are one file")


# (rule file, its text, the hidden file): each pairs a rule in one form with a file in the other.
CASES = {
    "aiexclude NFC name, NFD file": (".aiexclude", f"{NFC_NAME}\n", NFD_NAME),
    "cursorignore NFD name, NFC file": (".cursorignore", f"{NFD_NAME}\n", NFC_NAME),
    "geminiignore NFC folder, NFD folder": (".geminiignore", f"{NFC_DIR}/\n", f"{NFD_DIR}/a.txt"),
    "aiignore NFC path glob, NFD path": (".aiignore", f"/{NFC_DIR}/*.txt\n", f"{NFD_DIR}/a.txt"),
    "claude deny NFC path, NFD file": (
        ".claude/settings.json",
        json.dumps({"permissions": {"deny": [f"Read(./{NFC_DIR}/**)"]}}),
        f"{NFD_DIR}/a.txt",
    ),
    "claude deny NFD name, NFC file": (
        ".claude/settings.json",
        json.dumps({"permissions": {"deny": [f"Read({NFD_NAME})"]}}),
        NFC_NAME,
    ),
}


def listed(rel: str, said: str) -> bool:
    """Whether the answer names the file (either normal form): a row, or the count of what was
    left out (which never names a hidden file, SPEC §8.5)."""
    name = unicodedata.normalize("NFC", rel.rsplit("/", 1)[-1])
    return name in unicodedata.normalize("NFC", said)


@pytest.mark.parametrize("case", list(CASES))
async def test_a_rule_in_one_normal_form_hides_a_file_in_the_other(ws: Path, home: Path, case: str) -> None:
    keeps_names(ws)
    rule_file, rule, hidden = CASES[case]
    (ws / rule_file).parent.mkdir(parents=True, exist_ok=True)
    (ws / rule_file).write_text(rule, encoding="utf-8")
    (ws / hidden).parent.mkdir(parents=True, exist_ok=True)
    (ws / hidden).write_text(f"{CANARY} TOKEN=abc\n", encoding="utf-8")
    (ws / "visible.txt").write_text(f"{CANARY[:3]} seen\n")
    async with connect(ws) as c:
        read = await call(c, "ReadFile", path=str(ws / hidden))
        assert read.is_error and "hidden from AI tools by a rule in" in text(read), text(read)
        assert CANARY not in text(read)
        for mode in ("files_with_matches", "content", "count_matches"):
            grep = await call(c, "Grep", pattern="Qz7", output_mode=mode)
            assert CANARY not in text(grep) and "visible.txt" in text(grep), (mode, text(grep))
            assert not listed(hidden, text(grep)), (mode, text(grep))
        grep_file = await call(c, "Grep", pattern="Qz7", path=hidden, output_mode="content")
        assert CANARY not in text(grep_file), text(grep_file)
        glob = await call(c, "Glob", pattern="**/*")
        assert "visible.txt" in text(glob) and not listed(hidden, text(glob)), text(glob)
        visible = await call(c, "ReadFile", path="visible.txt")
        assert not visible.is_error, text(visible)


async def test_a_file_named_in_neither_form_stays_visible(ws: Path, home: Path) -> None:
    """The normalisation only ever joins the two spellings of one name: it hides nothing else."""
    keeps_names(ws)
    (ws / ".aiexclude").write_text(f"{NFC_NAME}\n", encoding="utf-8")
    other = unicodedata.normalize("NFD", "cafe-notes.txt")  # no accent: another name
    (ws / other).write_text("plain\n")
    async with connect(ws) as c:
        read = await call(c, "ReadFile", path=other)
    assert not read.is_error and "plain" in text(read), text(read)


async def test_a_write_deny_rule_in_one_form_refuses_a_write_in_the_other(ws: Path, home: Path) -> None:
    keeps_names(ws)
    (ws / ".claude").mkdir()
    deny = {"permissions": {"deny": [f"Edit(./{NFC_DIR}/**)", f"Write({NFD_NAME})"]}}
    (ws / ".claude" / "settings.json").write_text(json.dumps(deny), encoding="utf-8")
    async with connect(ws, approval="auto", read_guard=False) as c:
        for rel in (f"{NFD_DIR}/new.txt", NFC_NAME):
            r = await call(c, "WriteFile", path=rel, content="new\n")
            said = text(r)
            assert r.is_error and "denied for writing by a rule in `.claude/settings.json`" in said, said
    assert not (ws / NFD_DIR).exists() and not (ws / NFC_NAME).exists()
