"""scripts/mutation_score.py --write-docs: mutmut's verdicts → docs/mutation-results.json (the
figures and the survivors, by target) → docs/TESTING.md's table of targets."""

from __future__ import annotations

import copy
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


def test_a_target_of_part_of_a_module_counts_only_the_mutants_it_names() -> None:
    """``only`` (the rewind's functions of tools/undo_write.py): the rest of the module's mutants
    are neither counted nor listed as survivors, whatever mutmut says of them."""
    mutation = script()
    part = mutation.Target(("src/filegate/fsio/lines.py",), (), 90.0, only=("filegate.fsio.lines.x_*",))
    kept = mutation.in_scope(LISTING, part)
    assert mutation.by_module(kept) == {"fsio.lines": (2, 3)}
    assert "PendingCount" not in kept
    assert mutation.in_scope(LISTING, mutation.Target((), (), 90.0)) == LISTING


def test_a_run_that_left_mutants_unrun_is_recorded_as_partial() -> None:
    mutation = script()
    unrun = LISTING + "    filegate.fsio.lines.x_head__mutmut_9: not checked\n"
    assert mutation.record({}, "codec", unrun, "now")["codec"]["partial"] == (
        "5 of the 6 mutants in scope run; 1 not checked"
    )
    was = {"codec": {"partial": "an earlier run's", "survivors": {}}}
    assert "partial" not in mutation.record(was, "codec", LISTING, "now")["codec"]


def test_a_recorded_run_keeps_the_explanation_of_each_survivor_still_there_and_only_those() -> None:
    mutation = script()
    results = {
        "codec": {
            "run": "an earlier run",
            "modules": {"fsio.gone": {"killed": 1, "mutants": 1}},
            "renamed": {"fsio.gone": "fsio.lines"},
            "unlisted": 3,
            "killed_since": {"a kind": "a test"},
            "survivors": {
                "filegate.fsio.lines.xǁPendingCountǁresult__mutmut_3": "equivalent: the same count",
                "filegate.fsio.lines.x_iter_lines__mutmut_1": "killed now",
            },
            "groups": [{"count": 2, "kind": "equivalent", "where": "w", "why": "y"}],
            "notes": ["a note"],
        },
        "ladder": {"run": "untouched"},
    }
    before = copy.deepcopy(results)
    written = mutation.record(results, "codec", LISTING, "now, fresh")
    assert results == before  # a new mapping: the argument is left as it was
    assert written["ladder"] == before["ladder"]
    assert written["codec"] == {
        "run": "now, fresh",
        "modules": {
            "fsio.lines": {"killed": 2, "mutants": 4},
            "policy.escape": {"killed": 1, "mutants": 1},
        },
        "total": {"killed": 3, "mutants": 5, "timeouts": 1},
        "survivors": {  # the killed one's explanation goes, a new survivor waits for one
            "filegate.fsio.lines.x_tail__mutmut_4": "",
            "filegate.fsio.lines.xǁPendingCountǁresult__mutmut_3": "equivalent: the same count",
        },
        "groups": [{"count": 2, "kind": "equivalent", "where": "w", "why": "y"}],
        "groups_as_of": "an earlier run",  # the kinds explained describe that run, not this one
        "notes": ["a note"],
    }


def test_testing_md_shows_the_table_the_script_renders_from_the_results() -> None:
    """The docs agree with the data and the script's TARGETS: after editing
    docs/mutation-results.json, `scripts/mutation_score.py --render-docs` writes the table again."""
    mutation = script()
    doc = (REPO / "docs" / "TESTING.md").read_text("utf-8")
    begin, end = mutation.markers("scores")
    shown = doc[doc.index(begin) + len(begin) : doc.index(end)]
    assert shown == mutation.scores_table(mutation.load_results())


def test_the_table_is_replaced_alone() -> None:
    mutation = script()
    doc = (REPO / "docs" / "TESTING.md").read_text("utf-8")
    written = mutation.with_section(doc, "scores", "| new |\n")
    begin, end = mutation.markers("scores")
    assert f"{begin}| new |\n{end}" in written
    assert written[: written.index(begin)] == doc[: doc.index(begin)]
    assert written[written.index(end) :] == doc[doc.index(end) :]


def modules_mutated(mutation: Any, key: str) -> set[str]:
    """The modules a target mutates now, named as mutmut names them (less "filegate.")."""
    names = set()
    for pattern in mutation.target_of(key).mutate:
        for path in REPO.glob(pattern):
            if path.suffix == ".py":
                parts = path.relative_to(REPO / "src" / "filegate").with_suffix("").parts
                names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def test_every_target_has_its_results_naming_only_modules_it_mutates() -> None:
    """A module moved or gone since a target's figures were taken is said (`renamed`), so a
    figure is never read as the code's of today without saying so."""
    mutation = script()
    results = mutation.load_results()
    assert set(results) == {mutation.DEFAULT_KEY, *mutation.TARGETS}
    for key, entry in results.items():
        stale = set(entry["modules"]) - modules_mutated(mutation, key) - set(entry.get("renamed", {}))
        assert not stale, (key, stale, "moved or gone since this target's run: add them to `renamed`")


def test_the_figures_add_up_and_the_survivors_explained_are_the_runs() -> None:
    """Each target's modules add up to its total; its survivors by name, its kinds counted (when
    they describe this run) and those whose names were not kept are as many as survived."""
    for key, entry in script().load_results().items():
        total, modules = entry["total"], entry["modules"].values()
        if total["mutants"] is None:
            assert not modules and not entry["survivors"] and not entry["groups"], key
            continue
        if modules and all(m["mutants"] is not None for m in modules):
            assert sum(m["mutants"] for m in modules) == total["mutants"], key
            assert sum(m["killed"] for m in modules) == total["killed"], key
        survived = total["mutants"] - total["killed"]
        assert len(entry["survivors"]) <= survived, key
        counts = [group["count"] for group in entry["groups"]]
        if "groups_as_of" in entry or None in counts:
            continue  # the kinds of an earlier run, or explained without counts
        assert len(entry["survivors"]) + sum(counts) + entry.get("unlisted", 0) == survived, key
        for group in entry["groups"]:
            assert group["why"] and group["where"] and group["kind"], (key, group)


def test_every_target_names_files_that_exist() -> None:
    """A module moved (the subtraction's tools/grep/ package) must take its target with it."""
    for name, target in script().TARGETS.items():
        for pattern in target.mutate:
            assert list(REPO.glob(pattern)), (name, pattern)
        for test in target.tests:
            if test.startswith("tests/"):
                assert (REPO / test.split("::")[0]).exists(), (name, test)
