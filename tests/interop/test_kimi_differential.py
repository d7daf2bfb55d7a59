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
from tests.interop.kimi_driver import Result, find_kimi, run_kimi
from tests.interop.kimi_scenarios import Scenario, build_tree, scenarios

# scenario key → why filegate answers differently. "fix:" = a Kimi bug SPEC fixes;
# "intended:" = a deliberate difference of filegate's (SPEC says so); the section is named.
DIFFERENCES: dict[str, str] = {}


@dataclass(frozen=True)
class Rule:
    """A difference that recurs across scenarios, removed from both sides before comparing."""

    verdict: str  # "fix: …" or "intended: …", with the SPEC section
    tools: tuple[str, ...]
    kimi: Callable[[str, Path], str] = lambda t, root: t
    ours: Callable[[str, Path], str] = lambda t, root: t


RULES = [
    Rule(
        "intended: SPEC §4 WriteFile/StrReplaceFile — the message adds a short diff stat "
        "(and says when a file was created or CRLF was kept)",
        ("WriteFile", "StrReplaceFile"),
        ours=lambda t, root: re.sub(
            r"( Created a new file\.| Line endings: [^\n]*? written with CRLF\.| Lines: \+\d+ -\d+\.)", "", t
        ),
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
]


def under_rules(r: Result, tool: str, root: Path, side: str) -> tuple[Any, ...]:
    texts = list(r.texts)
    for rule in RULES:
        if tool in rule.tools:
            f = rule.kimi if side == "kimi" else rule.ours
            texts = [f(t, root) for t in texts]
    return (r.error, tuple(texts), tuple(r.media))


def rules_used(kimi: Result, ours: Result, tool: str, root: Path) -> list[str]:
    used = []
    for rule in RULES:
        if tool in rule.tools:
            k = [rule.kimi(t, root) for t in kimi.texts]
            o = [rule.ours(t, root) for t in ours.texts]
            if k != kimi.texts or o != ours.texts:
                used.append(rule.verdict)
    return used


def key(sc: Scenario, root: Path) -> str:
    return f"{sc.tool} {json.dumps(sc.args, sort_keys=True).replace(str(root), '$ROOT')}"


def describe(r: Result) -> str:
    media = [m[:120] + "…" for m in r.media]
    return json.dumps({"error": r.error, "texts": [t[:600] for t in r.texts], "media": media}, indent=1)


def test_filegate_answers_as_kimi_builtins_do_or_as_spec_intends(tmp_path: Path) -> None:
    kimi, why = find_kimi()
    if kimi is None:
        pytest.skip(f"Kimi CLI is not available here: {why}")
    root = tmp_path / "tree"
    plan = scenarios(root)
    calls = [(f"tc-{i}", sc.tool, sc.args) for i, sc in enumerate(plan)]

    build_tree(root)
    builtin = run_kimi(kimi, root / "w", calls, tmp_path / "home-builtin", {})
    build_tree(root)
    served = {"filegate": {"command": FILEGATE, "args": ["--client", "kimi"]}}
    ours = run_kimi(kimi, root / "w", calls, tmp_path / "home-filegate", served)

    identical, intended, fixed, unexplained, stale = [], [], [], [], []
    seen_keys = set()
    for (cid, _, _), sc in zip(calls, plan, strict=True):
        k = key(sc, root)
        seen_keys.add(k)
        same = builtin[cid].canonical() == ours[cid].canonical()
        reason = DIFFERENCES.get(k)
        if (
            not same
            and reason is None
            and under_rules(builtin[cid], sc.tool, root, "kimi")
            == under_rules(ours[cid], sc.tool, root, "ours")
        ):
            reason = " + ".join(rules_used(builtin[cid], ours[cid], sc.tool, root))
            (fixed if reason.startswith("fix:") else intended).append(k)
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
