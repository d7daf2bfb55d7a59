"""Differential test (issue 11.8): the same tool calls through Kimi CLI 1.51.0, once with its
built-in file tools and once with filegate's tools under the same names (an MCP tool named like
a built-in replaces it). Every difference must be listed below as intended, with the SPEC
section that asks for it; an unlisted difference fails, and so does a listed one that no longer
differs (the list stays true).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FILEGATE
from tests.interop.kimi_driver import INSTALL_S, RUN_S, Result, find_kimi, run_kimi
from tests.interop.kimi_scenarios import Scenario, build_tree, scenarios
from tests.tooling import tool_missing

# A real client (Kimi CLI) installed once from PyPI and run over every scenario: slow, and its
# own hang guards (the install, the run) speak before pytest-timeout does.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(INSTALL_S + RUN_S + 300)]

# scenario key → why filegate answers differently. "fix:" = a Kimi bug SPEC fixes;
# "intended:" = a deliberate difference of filegate's (SPEC says so); the section is named.
DIFFERENCES: dict[str, str] = {
    'ReadFile {"path": "bad.txt"}': "intended: SPEC §8.1 — a file shown with U+FFFD says so and names `encoding`/--legacy-encoding",
    'ReadFile {"path": "bad.txt"} #2': "intended: SPEC §8.1 — a file shown with U+FFFD says so and names `encoding`/--legacy-encoding",
    'ReadFile {"path": "bad.txt"} #3': "intended: SPEC §8.1 — a file shown with U+FFFD says so and names `encoding`/--legacy-encoding",
    'ReadFile {"path": "wide.txt"}': "intended: SPEC §8.7 — a cut line's summary names the column_offset that continues it",
    'ReadFile {"path": "bom.txt"}': "fix: SPEC §3 — a UTF-8 BOM marks the encoding; it is not shown as a U+FEFF character",
    'ReadFile {"path": "utf16.txt"}': "fix: SPEC §3/§4 ReadFile — UTF-16/32 with a BOM are text and decoded (Kimi: 'not readable')",
    'ReadFile {"path": "big.txt"}': "fix: SPEC §4 ReadFile (fits the client) — fewer whole lines so the summary survives Kimi's 100,000-character cut",
    'ReadFile {"path": "img/pic.png"}': "intended: SPEC §3 — the refusal names the sniffed MIME type and the tool to use (ReadMediaFile)",
    'ReadFile {"path": "fake.png"}': "fix: SPEC §3 — content wins over the name: a .png holding text is text",
    'ReadFile {"path": "data.bin"}': "intended: SPEC §3 — the refusal names the sniffed MIME type",
    'ReadMediaFile {"path": "img/broken.png"}': "fix: SPEC §4 ReadMediaFile — an image no decoder can open is refused (Kimi sends it, which can fail the client's request)",
    'ReadMediaFile {"path": "fake.png"}': "fix: SPEC §3 — content wins over the name: a .png holding text is text, not image/png",
    'ReadMediaFile {"path": "empty.txt"}': "fix: SPEC §4 ReadMediaFile — the size gate comes before the type: an empty file is 'empty'",
    'ReadMediaFile {"path": "data.bin"}': "intended: SPEC §3 — the refusal names the sniffed MIME type",
    'Glob {"pattern": "**/*.py"}': "fix: SPEC §4 Glob — a leading ** is allowed (Kimi refuses and lists the top level, secrets included)",
    'Glob {"pattern": "*"}': "intended: SPEC §2.6 + §4 Glob — sensitive files (.env) left out and counted; .gitignored paths (app.log, build) skipped",
    'Glob {"pattern": "src/**"}': "intended: SPEC §4 Glob — `src/**` lists what is below src, not src itself (gitignore's meaning of a trailing **)",
    'Glob {"pattern": "*.{md,log}"}': "fix: SPEC §4 Glob — {a,b} braces work (broken in Kimi); app.log is .gitignored and skipped",
    'Glob {"pattern": ".*"}': "intended: SPEC §2.6 — Glob leaves .env out and counts it",
    'Glob {"pattern": "**"}': "fix: SPEC §4 Glob — a leading ** is allowed (Kimi refuses and lists the top level, secrets included)",
    'Glob {"include_dirs": false, "pattern": "*"}': "intended: SPEC §2.6 + §4 Glob — sensitive files (.env) left out and counted; .gitignored paths (app.log) skipped",
    'Glob {"directory": "$ROOT/outside", "pattern": "*.txt"}': "intended: filegate has no skills directories, so its refusal names only the workspace's",
    'Glob {"pattern": "../*"}': "fix: SPEC §4 Glob — a pattern may not leave `directory` (Kimi listed the parent directory)",
    'Glob {"pattern": "$ROOT/w/*.txt"}': "intended: SPEC §4 Glob — an absolute pattern is refused with a sentence saying what to do instead",
    'Glob {"pattern": ""}': "fix: SPEC §4 Glob — an empty pattern is a clear error",
    'Glob {"pattern": "src/**/"}': "intended: SPEC §4 Glob — a trailing `/` matches directories only, below src (as `src/**`)",
    'Grep {"pattern": "hello"}': "intended: SPEC §4 Grep — .gitignore is respected without a .git folder too (build/ is ignored; Kimi's rg needs a .git)",
    'Grep {"output_mode": "content", "pattern": "hello"}': "intended: SPEC §4 Grep — .gitignore is respected without a .git folder too (build/ is ignored; Kimi's rg needs a .git)",
    'Grep {"output_mode": "count_matches", "pattern": "hello"}': "intended: SPEC §4 Grep — .gitignore is respected without a .git folder too (build/ is ignored; Kimi's rg needs a .git)",
    'Grep {"-i": true, "pattern": "HELLO"}': "intended: SPEC §4 Grep — .gitignore is respected without a .git folder too (build/ is ignored; Kimi's rg needs a .git)",
    'Grep {"-i": true, "output_mode": "content", "pattern": "HELLO"}': "intended: SPEC §4 Grep — .gitignore is respected without a .git folder too (build/ is ignored; Kimi's rg needs a .git)",
    'Grep {"-n": false, "output_mode": "content", "pattern": "error"}': "intended: SPEC §4 Grep — .gitignore is respected without a .git folder too (app.log is ignored; Kimi's rg needs a .git)",
    'Grep {"output_mode": "content", "path": "src/pkg/mod.py", "pattern": "return"}': "fix: SPEC §4 Grep — every printed line names its file (workdir-relative), also when `path` is one file",
    'Grep {"-C": 1, "output_mode": "content", "path": "src/pkg/mod.py", "pattern": "return"}': "fix: SPEC §4 Grep — every printed line names its file (workdir-relative), also when `path` is one file",
    'Grep {"-A": 1, "output_mode": "content", "path": "src/pkg/mod.py", "pattern": "return"}': "fix: SPEC §4 Grep — every printed line names its file (workdir-relative), also when `path` is one file",
    'Grep {"-B": 2, "output_mode": "content", "path": "src/pkg/mod.py", "pattern": "return"}': "fix: SPEC §4 Grep — every printed line names its file (workdir-relative), also when `path` is one file",
    'Grep {"head_limit": 10, "output_mode": "content", "path": "many", "pattern": "match"}': "fix: SPEC §4 Grep — stable order: a page holds the first results by path (Kimi's pages follow rg's thread order)",
    'Grep {"head_limit": 10, "offset": 10, "output_mode": "content", "path": "many", "pattern": "match"}': "fix: SPEC §4 Grep — stable order: a page holds the first results by path (Kimi's pages follow rg's thread order)",
    'Grep {"offset": 1000, "output_mode": "content", "path": "many", "pattern": "match"}': "fix: SPEC §4 Grep — an offset past the end says so and how many results there are",
    'Grep {"head_limit": 5, "output_mode": "count_matches", "path": "many", "pattern": "match"}': "fix: SPEC §4 Grep — stable order: a page holds the first results by path (Kimi's pages follow rg's thread order)",
    'Grep {"pattern": "(unclosed"}': "fix: SPEC §4 Grep (issue 11.7) — the regex error shows the caller's pattern, not rg's internal `(?:` wrapper",
    'Grep {"path": "missing", "pattern": "hello"}': "intended: SPEC §2 — a missing path gets the path rules' message, not rg's IO error",
    'Grep {"path": "../outside", "pattern": "hello"}': "fix: SPEC §2.4 — a relative path that leaves the workdir is refused (Kimi's Grep had no confinement)",
    'Grep {"path": "$ROOT/outside", "pattern": "hello"}': "fix: SPEC §4 Grep — a path outside the workspace is printed absolute, so ReadFile takes it as it is",
    'Grep {"output_mode": "content", "path": "$ROOT/w/a.txt", "pattern": "hello"}': "fix: SPEC §4 Grep — every printed line names its file (workdir-relative), also when `path` is one file",
    'Grep {"pattern": "built"}': "intended: SPEC §4 Grep — .gitignore is respected without a .git folder too (build/ is ignored; Kimi's rg needs a .git)",
    'Grep {"output_mode": "bogus", "pattern": "hello"}': "fix: SPEC §4 Grep — output_mode is validated (Kimi silently fell back to content without line numbers)",
    'Grep {"output_mode": "count_matches", "path": "long.txt", "pattern": "line 14\\\\d\\\\d"}': "fix: SPEC §4 Grep — a count over one file names the file and its total (Kimi: '100' then 'Found 0 total occurrences across 0 files')",
    'Grep {"head_limit": 3, "output_mode": "content", "path": "big.txt", "pattern": "y{150}"}': "fix: SPEC §4 Grep — every printed line names its file (workdir-relative), also when `path` is one file",
    'WriteFile {"content": "x\\n", "path": "nodir/x.txt"}': "intended: SPEC §4 WriteFile — the missing-parent error names the create_dirs parameter",
    'WriteFile {"content": "x\\n", "create_dirs": true, "path": "made/dir/x.txt"}': "fix: SPEC §4 WriteFile — `create_dirs: true` creates the parent directories",
    'WriteFile {"content": "x", "path": "src"}': "intended: SPEC §2.7 — a directory gets 'is not a file' (no OS error text with the absolute path)",
    'StrReplaceFile {"edit": {"new": "2", "old": "two"}, "path": "edit2.txt"}': "fix: SPEC §4 StrReplaceFile — an `old` found more than once without replace_all is refused with the count and lines (Kimi edits the first)",
    'StrReplaceFile {"edit": {"new": "x", "old": "absent"}, "path": "edit2.txt"}': "intended: SPEC §4 StrReplaceFile — not found: the error names the file and shows the closest region (none here)",
    'StrReplaceFile {"edit": {"new": "x", "old": ""}, "path": "edit2.txt"}': "fix: SPEC §4 StrReplaceFile — an empty `old` is refused (Kimi inserts `new` at the start)",
    'StrReplaceFile {"edit": {"new": "1", "old": "1"}, "path": "edit2.txt"}': "fix: SPEC §4 StrReplaceFile — `old == new` is refused as a no-op (Kimi: 'not found')",
    'StrReplaceFile {"edit": [{"new": "A", "old": "a"}, {"new": "Z", "old": "zzz"}], "path": "edit5.txt"}': "fix: SPEC §4 StrReplaceFile — an edit that matches nothing fails the whole call, nothing written (Kimi applies the rest)",
    'ReadFile {"path": "edit5.txt"} #2': "follows from the edit5.txt edit before it: filegate wrote nothing, Kimi applied the first edit",
    'ReadFile {"path": "bom.txt"} #2': "fix: SPEC §3 — a UTF-8 BOM marks the encoding; it is not shown as a U+FEFF character",
    'ReadFile {"path": "bom.txt"} #3': "fix: SPEC §3 — a UTF-8 BOM marks the encoding; it is not shown as a U+FEFF character",
    'Grep {"output_mode": "content", "pattern": "x{100}"}': "fix: SPEC §4 Grep — both cut the line to 2,000 characters with [...truncated] included (issue 24.3), but filegate's path has no `./`, so its 2,000 hold two more characters of the line",
    'ReadFile {"line_offset": -122, "path": "wide122.txt"}': "fix: SPEC §4 ReadFile (fits the client; every reason named) — fewer whole lines so the summary survives Kimi's 100,000-character cut, and the summary names both cuts: lines 1-20 by the 102400-byte cap (Kimi's sentence) and the next ones by the budget",
    'StrReplaceFile {"edit": {"new": "FOO", "old": "foo"}, "path": "dup.txt"}': "fix: SPEC §4 StrReplaceFile — an `old` found more than once without replace_all is refused with the count and lines (Kimi edits the first)",
    'StrReplaceFile {"edit": {"new": "FOO", "old": "foo", "replace_all": true}, "path": "dup.txt"}': "follows from the dup.txt edit before it: Kimi's earlier edit left one `foo` fewer, so replace_all counts 2 there and 3 here",
}


@dataclass(frozen=True)
class Rule:
    """A difference that recurs across scenarios, removed from both sides before comparing."""

    verdict: str  # "fix: …" or "intended: …", with the SPEC section
    tools: tuple[str, ...]
    kimi: Callable[[str, Path], str] = lambda t, root: t
    ours: Callable[[str, Path], str] = lambda t, root: t


SECRETS_SENTENCE = re.compile(
    r" ?Skipped \d+ sensitive file\(s\) \((?:[^()]|\([^)]*\))*\) to protect secrets\. "
    r"These files may contain credentials or private keys\."
)
VALIDATION = "Error validating JSON arguments"


def _sorted_lines(t: str, root: Path) -> str:
    ended = t.endswith("\n")  # a block's closing line break stays where it is
    return "\n".join(sorted(t.removesuffix("\n").split("\n"))) + ("\n" if ended else "")


def _video_facts(t: str, root: Path) -> str:
    """A video's opening block as Kimi's: its first line, the `<video path=…>` tag, alone."""
    head, sep, rest = t.partition("\n")
    return head + sep if head.startswith("<video path=") and rest.startswith("video/") else t


def _validation(t: str, root: Path) -> str:
    return VALIDATION if t.startswith(VALIDATION) else t


RULES = [
    Rule(
        "intended: SPEC §4 WriteFile/StrReplaceFile — the message adds a short diff stat "
        "(and says when a file was created, already had the content, or kept CRLF); SPEC §8.1 "
        "says what of the file's style an overwrite kept; SPEC §8.4 ends it with the write's id",
        ("WriteFile", "StrReplaceFile"),
        ours=lambda t, root: re.sub(
            r"( Line endings: [^\n]*? written with CRLF\.| Lines: \+\d+ -\d+\."
            r"| The file already had this content; nothing changed\.| Kept the file's .*?(?=\nWrite id: |$)"
            r"|\nWrite id: w-[0-9a-f]{16}\.$)",
            "",
            t,
        ),
    ),
    Rule(
        "intended: a file that did not exist says it was created (Created `new1.txt`.), where "
        "Kimi says it was overwritten (no scenario appends to a missing file)",
        ("WriteFile",),
        ours=lambda t, root: re.sub(r"^Created `[^`\n]*`\.", "File successfully overwritten.", t),
    ),
    Rule(
        "fix: SPEC §4 Grep — paths are printed relative to the workdir, without Kimi's `./`",
        ("Grep",),
        kimi=lambda t, root: re.sub(r"(?m)^\./", "", t),
    ),
    Rule(
        "fix: SPEC §2.9 — a path is shown as the caller gave it, never as the server's absolute path",
        ("ReadMediaFile",),
        kimi=lambda t, root: t.replace(f"{root}/w/", ""),
    ),
    Rule(
        "intended: SPEC §4 ReadMediaFile — a video's opening block says what is known of it (MIME "
        "type, bytes; its duration, size and codec, or why they are unknown); the video itself is "
        "sent as Kimi sends it, with PyAV installed or not (issue 24.2)",
        ("ReadMediaFile",),
        ours=_video_facts,
    ),
    Rule(
        "intended: SPEC §2.6 — Grep and Glob say how many sensitive files they left out",
        ("Grep", "Glob"),
        ours=lambda t, root: SECRETS_SENTENCE.sub("", t),
    ),
    Rule(
        "fix: SPEC §4 Grep — a stable order (by path, lines in file order), so paging neither "
        "repeats nor skips; Kimi prints rg's thread order",
        ("Grep",),
        kimi=_sorted_lines,
        ours=_sorted_lines,
    ),
    Rule(
        "intended: SPEC §1 — bad arguments are refused by the MCP layer's schema validation "
        "(the same facts as Kimi's pydantic text, in other words)",
        ("ReadFile", "ReadMediaFile", "WriteFile", "StrReplaceFile", "Glob", "Grep"),
        kimi=_validation,
        ours=_validation,
    ),
]


SEPARATED = (
    "intended: SPEC §1 — every text block another block follows ends with a line break (Kimi Code "
    "joins blocks with nothing between them)"
)


def separated(texts: list[str]) -> list[str]:
    """Kimi's blocks as filegate sends its own (server/render.py): each one but the last ends
    with a line break."""
    return [t if i == len(texts) - 1 or t.endswith("\n") else t + "\n" for i, t in enumerate(texts)]


ONE_BLOCK = (
    "intended: SPEC §9 — a text-only result is one text block (the output, then the summary): "
    "Codex drops every block after the first"
)


def under_rules(r: Result, tool: str, root: Path, side: str) -> tuple[Any, ...]:
    # Kimi's blocks as filegate separates its own, and joined into one where filegate sends one
    # (no media); compared up to the end of the last one (a rule may remove the block that a
    # separator was put before).
    texts = separated(list(r.texts)) if side == "kimi" else list(r.texts)
    if side == "kimi" and not r.media and len(texts) > 1:
        texts = ["".join(texts)]
    for rule in RULES:
        if tool in rule.tools:
            f = rule.kimi if side == "kimi" else rule.ours
            texts = [f(t, root) for t in texts]
    texts = [t for t in texts if t]
    if texts:
        texts[-1] = texts[-1].rstrip("\n")
    return (r.error, tuple(t for t in texts if t), tuple(r.media))


def rules_used(kimi: Result, ours: Result, tool: str, root: Path) -> list[str]:
    used = [SEPARATED] if separated(list(kimi.texts)) != kimi.texts else []
    if not kimi.media and len(kimi.texts) > 1:
        used.append(ONE_BLOCK)
    for rule in RULES:
        if tool in rule.tools:
            k = [rule.kimi(t, root) for t in kimi.texts]
            o = [rule.ours(t, root) for t in ours.texts]
            if k != kimi.texts or o != ours.texts:
                used.append(rule.verdict)
    return used


def key(sc: Scenario, root: Path, seen: dict[str, int]) -> str:
    """The scenario's call with the tree's path made neutral; `#2` on the second same call."""
    k = f"{sc.tool} {json.dumps(sc.args, sort_keys=True).replace(str(root), '$ROOT')}"
    seen[k] = seen.get(k, 0) + 1
    return k if seen[k] == 1 else f"{k} #{seen[k]}"


def describe(r: Result) -> str:
    media = [m[:120] + "…" for m in r.media]
    return json.dumps({"error": r.error, "texts": [t[:600] for t in r.texts], "media": media}, indent=1)


def test_filegate_answers_as_kimi_builtins_do_or_as_spec_intends(tmp_path: Path) -> None:
    kimi, why = find_kimi()
    if kimi is None:
        tool_missing(f"Kimi CLI is not available here: {why}")
    root = tmp_path / "tree"
    plan = scenarios(root)
    calls = [(f"tc-{i}", sc.tool, sc.args) for i, sc in enumerate(plan)]

    build_tree(root)
    builtin = run_kimi(kimi, root / "w", calls, tmp_path / "home-builtin", {})
    build_tree(root)
    served = {"filegate": {"command": FILEGATE, "args": ["--client", "kimi"]}}
    ours = run_kimi(kimi, root / "w", calls, tmp_path / "home-filegate", served)

    identical, intended, fixed, unexplained, stale = [], [], [], [], []
    seen_keys: set[str] = set()
    occurrences: dict[str, int] = {}
    for (cid, _, _), sc in zip(calls, plan, strict=True):
        k = key(sc, root, occurrences)
        seen_keys.add(k)
        same = builtin[cid].canonical() == ours[cid].canonical()
        reason = DIFFERENCES.get(k)
        if (
            not same
            and reason is None
            and under_rules(builtin[cid], sc.tool, root, "kimi")
            == under_rules(ours[cid], sc.tool, root, "ours")
        ):
            used = rules_used(builtin[cid], ours[cid], sc.tool, root)
            (fixed if any(u.startswith("fix:") for u in used) else intended).append(k)
            continue
        if same:
            (stale if reason else identical).append(k)
        elif reason is None:
            unexplained.append(
                f"{sc.id} {k}\n--- kimi:\n{describe(builtin[cid])}\n--- filegate:\n{describe(ours[cid])}"
            )
        else:
            (fixed if reason.startswith("fix:") else intended).append(k)

    report = (
        f"{len(plan)} scenarios: {len(identical)} identical, {len(intended)} intended, "
        f"{len(fixed)} fixed, {len(unexplained)} unexplained, {len(stale)} listed but identical"
    )
    out = os.environ.get("FILEGATE_KIMI_REPORT")
    if out:
        Path(out).write_text(report + "\n\n" + "\n\n".join(unexplained) + "\n\nstale:\n" + "\n".join(stale))
    print(report)
    assert len(plan) >= 150
    assert not (set(DIFFERENCES) - seen_keys), (
        f"listed differences with no scenario: {set(DIFFERENCES) - seen_keys}"
    )
    assert not unexplained, report + "\n\n" + "\n\n".join(unexplained)
    assert not stale, report + "\nlisted as different but identical now:\n" + "\n".join(stale)
