"""scripts/mutation_score.py --write-docs: mutmut's verdicts → docs/TESTING.md's rates by module."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

LISTING = """\
    filegate.fsio.lines.x_iter_lines__mutmut_1: killed
    filegate.fsio.lines.x_iter_lines__mutmut_2: timeout
    filegate.fsio.lines.xǁPendingCountǁresult__mutmut_3: survived
    filegate.fsio.lines.x_tail__mutmut_4: no tests
    filegate.policy.escape.x_escape__mutmut_1: killed
    filegate.policy.escape.x_escape__mutmut_2: skipped
"""


def script() -> Any:
    spec = importlib.util.spec_from_file_location("mutation_score", REPO / "scripts" / "mutation_score.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_verdicts_are_counted_by_module_a_timeout_as_killed() -> None:
    counts = script().by_module(LISTING)
    assert counts == {"fsio.lines": (2, 4), "policy.escape": (1, 1)}


def test_the_table_has_a_row_per_module_and_the_total_with_its_threshold() -> None:
    table = script().rates_table({"fsio.lines": (2, 4), "policy.escape": (1, 1)}, 90.0)
    assert table.splitlines()[2:] == [
        "| fsio.lines | 2 | 4 | 50.0 % |",
        "| policy.escape | 1 | 1 | 100.0 % |",
        "| **all** | **3** | **5** | **60.0 %** (threshold 90 %) |",
    ]


def test_each_target_section_of_testing_md_is_replaced_alone() -> None:
    mutation = script()
    doc = (REPO / "docs" / "TESTING.md").read_text()
    for key in ("policy-fsio", *sorted(set(mutation.TARGETS) - {"budget", "perfcall", "perfgrep"})):
        written = mutation.with_section(doc, key, "| new |\n")
        begin, end = mutation.markers(key)
        assert f"{begin}| new |\n{end}" in written, key
        assert written[: written.index(begin)] == doc[: doc.index(begin)], key  # before: unchanged
        assert written[written.index(end) :] == doc[doc.index(end) :], key  # after: unchanged


def test_every_target_names_files_that_exist() -> None:
    """A module moved (the subtraction's tools/grep/ package) must take its target with it."""
    for name, target in script().TARGETS.items():
        for pattern in target.mutate:
            assert list(REPO.glob(pattern)), (name, pattern)
        for test in target.tests:
            if test.startswith("tests/"):
                assert (REPO / test.split("::")[0]).exists(), (name, test)
