"""The secret-canary matrix (issue 10, SPEC §2.6): no tool tells anything about a sensitive file.

Every cell is one server and one client: a sensitive-path form (inside ``.env``, an absolute
path outside, a harmless-named symlink, a case variant, a suffixed key, a file under an
``.env.example/`` directory) × both protocol eras × the client's elicitation (none, accept,
reject) × ``--confine`` on and off. In each cell every tool is sent every probe a model could
use to learn something about the file. Nothing of it may reach the client or the log before
the user approved a write to it: not a byte of the canary, nor its size, line count, match
count, match positions, "already had this content", a diff of it, or its file type.

What is looked at: every result (text and structuredContent), every MCP log message and
progress message the client receives, every approval question, and every log record the
server writes. A question may show what the *model* sent (the guess probe sends the content
itself): for that probe only the question's verdict paragraph is checked.
"""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call, connect

CANARY = "Vx3-SECRET-CANARY-90d2"
NEEDLE = "SECRET_TOKEN"  # a word the secret holds many times, and the decoy once
MATCHES = 37  # lines of the secret holding NEEDLE
LINES = 53


def _secret() -> bytes:
    lines = [f"{NEEDLE}_{i}={CANARY}-{i}" for i in range(MATCHES)]
    lines += [f"other_{i}=value-{i}" for i in range(LINES - MATCHES - 2)]
    lines += ["region=eu", "region=eu"]
    body = "\n".join(lines) + "\n"
    return body.encode()


SECRET = _secret()
SIZE = len(SECRET)
assert SECRET.count(b"\n") == LINES and SECRET.count(NEEDLE.encode()) == MATCHES

# The six forms of a sensitive path: (where the secret is, relative to the cell's base; the path
# the model passes, "{ws}" and "{out}" filled in; a symlink to make: (link, target) or None).
FORMS: dict[str, tuple[str, str, tuple[str, str] | None]] = {
    "inside": ("ws/.env", ".env", None),
    "outside_absolute": ("out/home/.ssh/id_rsa", "{out}/home/.ssh/id_rsa", None),
    "symlinked": ("ws/.env", "notes.txt", ("ws/notes.txt", ".env")),
    "case_variant": ("ws/config/.ENV.Local", "config/.ENV.Local", None),
    "suffixed_key": ("ws/keys/id_rsa_work", "keys/id_rsa_work", None),
    "under_env_example_dir": ("ws/.env.example/.env", ".env.example/.env", None),
}

# Words a tool would use to give away a derived fact.
TELLS = (
    "closest",
    "occurs",
    "at lines",
    "at line ",
    "already had",
    "Size:",
    "lines:",
    "text file",
    "text/plain",
    "is not valid UTF-8",
)


def leaks(text: str, *, sizes: bool = True) -> list[str]:
    """The facts about the canary file found in ``text``."""
    found = []
    if CANARY in text or "CANARY" in text or "other_1=" in text:  # never in a probe
        found.append("content")
    numbers = (SIZE, LINES, MATCHES, MATCHES + 1) if sizes else ()
    for n in numbers:
        if re.search(rf"(?<![\w.]){n}(?![\w.])", text):
            found.append(f"number {n}")
    found += [word for word in TELLS if word in text]
    return found


def everything(result: Any) -> str:
    texts = [getattr(b, "text", "") for b in result.content]
    return "\n".join(texts) + "\n" + json.dumps(result.structured_content or {})


@dataclass
class Client:
    """What the client saw besides results: questions asked, log and progress messages."""

    decision: str  # "accept" (approve) or "reject"
    questions: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)

    async def elicit(self, message: str, response_type: Any, params: Any, context: Any) -> Any:
        self.questions.append(message)
        return {"decision": "approve" if self.decision == "accept" else "reject"}

    async def log(self, message: Any) -> None:
        self.messages.append(json.dumps(message.data, default=str))

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.messages.append(message or "")


@dataclass(frozen=True)
class Probe:
    tool: str
    args: dict[str, Any]
    sends_content: bool = False  # the model's own arguments hold the secret's bytes


def probes(path: str, parent: str, out_dir: str) -> list[Probe]:
    """Every way each tool could be asked about the file at ``path`` (in directory ``parent``)."""
    grep_scopes = [path, out_dir] if os.path.isabs(path) else [path, parent or "."]
    return [
        Probe("ReadFile", {"path": path}),
        Probe("ReadFile", {"path": path, "line_offset": 30, "n_lines": 2}),
        Probe("ReadFile", {"path": path, "line_offset": -5}),
        Probe("ReadMediaFile", {"path": path}),
        # Not found: Kimi-style tools show the closest region, numbered.
        Probe("StrReplaceFile", {"path": path, "edit": {"old": f"{NEEDLE}_1=wrong", "new": "x"}}),
        # Found twice: "occurs 2 times (at lines …)" is an oracle.
        Probe("StrReplaceFile", {"path": path, "edit": {"old": "region=eu", "new": "region=us"}}),
        # Append nothing: "current size" would be the file's size.
        Probe("WriteFile", {"path": path, "content": "", "mode": "append"}),
        # Guess the whole content: "already had this content" would confirm it.
        Probe("WriteFile", {"path": path, "content": SECRET.decode()}, sends_content=True),
        *(
            Probe("Grep", {"pattern": NEEDLE, "path": scope, "output_mode": mode, "include_ignored": True})
            for scope in grep_scopes
            for mode in ("content", "count_matches", "files_with_matches")
        ),
        Probe("Grep", {"pattern": "CANARY", "path": path, "output_mode": "content", "-C": 3}),
        Probe("Glob", {"pattern": "**/*", "directory": out_dir}),
        Probe("Glob", {"pattern": f"{parent}/*" if parent else "*"}),
    ]


@pytest.fixture
def server_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG)
    return caplog


@pytest.mark.parametrize("confine", [False, True], ids=["open", "confined"])
@pytest.mark.parametrize("elicitation", ["none", "accept", "reject"])
@pytest.mark.parametrize("form", list(FORMS))
async def test_no_tool_tells_anything_about_a_sensitive_file_before_approval(
    tmp_path: Path,
    mode: str,
    form: str,
    elicitation: str,
    confine: bool,
    server_logs: pytest.LogCaptureFixture,
) -> None:
    base = Path(os.path.realpath(tmp_path))
    ws, out = base / "ws", base / "out"
    ws.mkdir()
    out.mkdir()
    where, raw, link = FORMS[form]
    secret = base / where
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_bytes(SECRET)
    if link is not None:
        (base / link[0]).symlink_to(link[1])
    (ws / "decoy.txt").write_text(f"{NEEDLE}=public\n")  # one match that may be told
    path = raw.format(ws=ws, out=out)
    parent = "" if os.path.isabs(path) else os.path.dirname(path)
    client = Client(elicitation)
    kw: dict[str, Any] = {"confine": confine, "client_log_handler": client.log}
    kw["client_progress_handler"] = client.progress
    if elicitation != "none":
        kw["client_elicitation_handler"] = client.elicit

    cell = f"{form}/{mode}/{elicitation}/{'confined' if confine else 'open'}"
    told: list[tuple[Probe, str]] = []
    async with connect(ws, mode, **kw) as c:
        for probe in probes(path, parent, str(out)):
            asked_before = len(client.questions)
            result = await call(c, probe.tool, **probe.args)
            shown = everything(result)
            told.append((probe, shown))
            for question in client.questions[asked_before:]:
                checked = question.partition("\n\n")[0] if probe.sends_content else question
                assert leaks(checked) == [], (cell, probe, question)
            approved = elicitation == "accept" and len(client.questions) > asked_before
            # After an approved write the result may speak of the new bytes, never the old ones.
            assert leaks(shown, sizes=not approved) == [], (cell, probe, shown)
            if probe.tool in ("ReadFile", "ReadMediaFile"):
                assert result.is_error, (cell, probe, shown)
    # Not vacuous: where a write may be asked about, it was, and as a sensitive one.
    refused_outright = confine and form == "outside_absolute"
    if elicitation != "none" and not refused_outright:
        assert client.questions, cell
        assert all("SENSITIVE" in q.splitlines()[0] for q in client.questions), (cell, client.questions)
    else:
        assert client.questions == [], cell
    for message in client.messages:
        assert leaks(message) == [], (cell, message)
    for record in server_logs.records:
        assert leaks(record.getMessage(), sizes=False) == [], (cell, record.getMessage())
    # A rejected or unasked write changed nothing; an accepted guess wrote the same bytes back.
    if elicitation != "accept":
        assert secret.read_bytes() == SECRET
    # The whole-workspace count sees the decoy's one match, and only it.
    for probe, shown in told:
        if (
            probe.tool == "Grep"
            and probe.args["path"] == "."
            and probe.args["output_mode"] == "count_matches"
        ):
            assert "decoy.txt:1" in shown, (cell, shown)


def test_the_matrix_has_every_cell() -> None:
    """6 forms × 3 elicitation answers × 2 confinements × 2 eras (the ``mode`` fixture)."""
    assert len(FORMS) == 6
    assert {"inside", "outside_absolute", "symlinked", "case_variant", "suffixed_key"} < set(FORMS)


def test_the_leak_detector_sees_each_kind_of_fact() -> None:
    """The detector is the matrix's only eye: each fact it must catch, it catches."""
    assert leaks(f"line: {CANARY}-3") == ["content"]
    assert leaks(f"Size: {SIZE}") == [f"number {SIZE}", "Size:"]
    assert leaks(f"{LINES} lines") == [f"number {LINES}"]
    assert leaks(f"Found {MATCHES} total occurrences") == [f"number {MATCHES}"]
    assert leaks("`old` occurs 2 times (at lines 52, 53)") == [f"number {LINES}", "occurs", "at lines"]
    assert leaks("The file already had this content.") == ["already had"]
    assert leaks("is a text file (text/plain)") == ["text file", "text/plain"]
    assert leaks("File successfully overwritten.") == []
    assert leaks(f"{SIZE}1 and x{SIZE}") == []  # a number inside another is not the size
