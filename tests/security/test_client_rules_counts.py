"""Glob's and Grep's count of what they left out (SPEC §2.6, §8.5; issue 53 item 11): files a
client rule hides are counted apart from secrets, never named and never called credentials,
and said to be hidden by that rule file; secrets keep Kimi's own sentence, which names them.

The red team's case: "Skipped 2 sensitive file(s) (keys.txt, more.txt) … These files may contain
credentials or private keys. Some are hidden from AI tools by rules in `.cursorignore`." — a
user hid the names too, and they are not credentials.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call, connect, text

HIDDEN = ("keys.txt", "sub/more.txt", "denied-zq.txt")
NEEDLE = "NEEDLE_WORD"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = Path(os.path.realpath(tmp_path)) / "home"
    h.mkdir()
    monkeypatch.setenv("HOME", str(h))
    return h


def build(ws: Path, secret: bool) -> None:
    (ws / ".cursorignore").write_text("keys.txt\nmore.txt\n")
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Read(./denied-zq.txt)"]}})
    )
    (ws / "sub").mkdir()
    for rel in HIDDEN:
        (ws / rel).write_text(f"{NEEDLE} hidden\n")
    (ws / "visible.txt").write_text(f"{NEEDLE} visible\n")
    if secret:
        (ws / ".env").write_text(f"{NEEDLE}=1\n")


PROBES: list[tuple[str, dict[str, Any]]] = [
    ("Glob", {"pattern": "**/*"}),
    ("Glob", {"pattern": "**/*", "head_limit": 5}),
    ("Grep", {"pattern": NEEDLE}),
    ("Grep", {"pattern": NEEDLE, "output_mode": "content"}),
    ("Grep", {"pattern": NEEDLE, "output_mode": "count_matches"}),
    ("Grep", {"pattern": NEEDLE, "include_ignored": True}),
]
HIDDEN_SENTENCE = "3 files hidden from AI tools by the rules in `.claude/settings.json`, `.cursorignore`."


@pytest.mark.parametrize(("tool", "args"), PROBES)
async def test_rule_hidden_files_are_counted_never_named_nor_called_credentials(
    ws: Path, home: Path, tool: str, args: dict[str, Any]
) -> None:
    build(ws, secret=False)
    async with connect(ws) as c:
        said = text(await call(c, tool, **args))
    assert "visible.txt" in said, said
    for rel in HIDDEN:
        assert rel.rsplit("/", 1)[-1] not in said, said
    assert HIDDEN_SENTENCE in said, said
    for word in ("credential", "secret", "sensitive", "private key"):
        assert word not in said.lower(), said


@pytest.mark.parametrize(("tool", "args"), PROBES)
async def test_secrets_keep_their_own_sentence_beside(
    ws: Path, home: Path, tool: str, args: dict[str, Any]
) -> None:
    build(ws, secret=True)
    async with connect(ws) as c:
        said = text(await call(c, tool, **args))
    assert (
        "Skipped 1 sensitive file(s) (.env) to protect secrets. These files may contain credentials" in said
    ), said
    assert HIDDEN_SENTENCE in said, said
    for rel in HIDDEN:
        assert rel.rsplit("/", 1)[-1] not in said, said


async def test_a_grep_of_one_hidden_file_names_it_no_more(ws: Path, home: Path) -> None:
    """The caller named the file; the answer still only counts it, as hidden by its rule file."""
    build(ws, secret=False)
    async with connect(ws) as c:
        said = text(await call(c, "Grep", pattern=NEEDLE, path="sub/more.txt", output_mode="content"))
    assert "1 file hidden from AI tools by the rules in `.cursorignore`." in said, said
    assert "more.txt" not in said and "credential" not in said, said


async def test_the_clients_log_notice_tells_hidden_from_secret(ws: Path, home: Path) -> None:
    build(ws, secret=True)
    seen: list[str] = []

    async def logs(message: Any) -> None:
        seen.append(str(message.data))

    async with connect(ws, client_log_handler=logs) as c:
        await call(c, "Glob", pattern="**/*")
    assert any("Glob left out 1 file(s) that may hold secrets." in s for s in seen), seen
    assert any("Glob left out 3 file(s) hidden from AI tools by client rules." in s for s in seen), seen
