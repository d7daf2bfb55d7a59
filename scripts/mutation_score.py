"""Mutation testing of policy/ and fsio/ at their seam (issue 17; docs/TESTING.md).

Runs mutmut 3 as configured in pyproject.toml ([tool.mutmut]: mutate src/filegate/policy and
src/filegate/fsio, run tests/policy and tests/fsio), then prints one line with the kill rate
and exits 1 when it is under the threshold. A mutant counts as killed when a test failed or
timed out on it (a mutant that makes a scan loop forever is caught); one that no test even
reaches counts as surviving. Equivalent mutants excluded with ``# pragma: no mutate`` are
counted and printed, so the figure never hides them.

    .venv/bin/python scripts/mutation_score.py            # fresh run (removes mutants/)
    .venv/bin/python scripts/mutation_score.py --keep     # reuse mutants/ (mutmut's cache)
    .venv/bin/python scripts/mutation_score.py --rerun-survivors   # after adding tests
    .venv/bin/python scripts/mutation_score.py --rerun-timeouts    # timeouts again, on a quieter machine
    .venv/bin/python scripts/mutation_score.py --target approval   # another named target (TARGETS)
    .venv/bin/python scripts/mutation_score.py --keep --write-docs # the run into docs/mutation-results.json
    .venv/bin/python scripts/mutation_score.py --render-docs       # docs/TESTING.md's table from that file

``--target NAME`` mutates another part of the package against its own tests, as TARGETS
below names them (the outer edges of issue 26). It overrides ``only_mutate`` and the test
selection of ``[tool.mutmut]`` for that run only, by running mutmut with its configuration
reader replaced; ``pyproject.toml`` keeps the policy/fsio run. Each target needs its own fresh
``mutants/`` (mutmut's cache does not know which target made it): switching targets without
``--keep`` starts afresh.

A target may mutate part of a module only (``only``: fnmatch patterns of mutmut's mutant names,
its functions named; the rewind's functions of tools/undo_write.py): the rest of the module's
mutants are not run, and neither counted nor listed. For such a target ``--keep`` runs the
mutants of its scope not run yet (an interrupted run goes on where it stopped).

mutmut keeps a mutant's verdict until its function changes, so a test added after a run kills
nothing until the survivors are run again: ``--rerun-survivors`` runs just those (with the
tests as they are now) on top of the previous run.

``--write-docs`` records the run in ``docs/mutation-results.json`` (data: per target, the run,
the figures by module, and each survivor by name with why it survives, "" until someone says;
an explanation is kept for as long as its mutant survives) and renders docs/TESTING.md's table
of targets from that file and ``TARGETS``.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
MUTATED = (ROOT / "src/filegate/policy", ROOT / "src/filegate/fsio")
THRESHOLD = 90.0


class Target(NamedTuple):
    mutate: tuple[str, ...]  # only_mutate globs, relative to the repository
    tests: tuple[str, ...]  # what pytest runs for each mutant
    threshold: float
    # Mutants run and counted, when not all of ``mutate``'s (fnmatch patterns of mutmut's
    # names: a part of a module, its functions named): the rest stay "not checked", uncounted.
    only: tuple[str, ...] = ()
    scope: str = ""  # ``only`` in words, for docs/TESTING.md's table


# Named targets beyond the default (pyproject's [tool.mutmut]). Tests listed here must run the
# code in-process: a subprocess importing filegate gets the unmutated editable install.
TARGETS: dict[str, Target] = {
    # A small target that checks the machinery itself in a minute.
    "budget": Target(("src/filegate/policy/budget.py",), ("tests/policy/test_result_budget.py",), 90.0),
    "perfcall": Target(
        ("src/filegate/server/render.py",),
        ("tests/server/test_render.py", "tests/server/test_text_only.py"),
        85.0,
    ),
    "approval": Target(
        ("src/filegate/server/approval.py", "src/filegate/server/questions.py"),
        (
            "tests/server/test_approval.py",
            "tests/server/test_approval_rules.py",
            "tests/server/test_approval_edges.py",
        ),
        85.0,
    ),
    "perfgrep": Target(
        ("src/filegate/tools/grep/rg.py", "src/filegate/tools/grep/sandbox.py"),
        ("tests/tools/test_grep_spawn.py", "tests/tools/test_grep_sandbox.py"),
        85.0,
    ),
    # The codec decision of SPEC §8.1 (issue 35), against its pure tests.
    "codec": Target(("src/filegate/fsio/codec.py",), ("tests/fsio/test_codec.py",), 90.0),
    # StrReplaceFile's matching ladder (SPEC §8.2), a pure module tested alone.
    "ladder": Target(
        ("src/filegate/tools/edit/matching.py", "src/filegate/tools/edit/hits.py"),
        ("tests/tools/test_matching.py",),
        90.0,
    ),
    # The client rules of SPEC §8.5 (issue 38): the sources' verdicts, on real files, and on
    # Windows spellings as pure logic.
    "clientrules": Target(
        ("src/filegate/policy/clientrules.py",),
        ("tests/policy/test_clientrules.py", "tests/policy/test_clientrules_windows.py"),
        90.0,
    ),
    "http": Target(("src/filegate/server/http.py",), ("tests/server/test_http_inprocess.py",), 85.0),
    "install": Target(
        ("src/filegate/install/*.py",),
        ("tests/test_install_inprocess.py", "tests/test_install_files.py"),
        85.0,
    ),
    # install's one door for every file it touches (issue 41): the symlink, temp, backup and
    # mode rules it picks from fsio for each file.
    "installfiles": Target(
        ("src/filegate/install/files.py",),
        ("tests/test_install_files.py", "tests/test_install_inprocess.py", "tests/test_install_uninstall.py"),
        90.0,
    ),
    # Grep's parser and ignore handling (issue 26; tools/grep/ since the subtraction, issue 40:
    # grep_ignores.py is now grep/walk.py, with the matcher in policy/gitignore.py).
    # grep/plan.py alone (the walk's findings → rg's ignore flags and rules file): the grep
    # target's newest file, in a fraction of that target's time.
    "grepplan": Target(
        ("src/filegate/tools/grep/plan.py",),
        tuple(
            f"tests/tools/test_{name}.py"
            for name in (
                "grep",
                "grep_rules",
                "grep_walk",
                "where_facilities_are_missing",
            )
        ),
        85.0,
    ),
    # The write history store (SPEC §8.4, issue 37) against its own tests and UndoWrite's.
    "history": Target(
        ("src/filegate/fsio/history.py", "src/filegate/fsio/historylog.py", "src/filegate/fsio/preimages.py"),
        ("tests/fsio/test_history.py", "tests/tools/test_undo_write.py"),
        90.0,
    ),
    # The read guard's change tracking (SPEC §8.3): which lines changed since the read, and the
    # refusal or notice an edit gets; its tests drive StrReplaceFile through in-memory clients.
    "guardlines": Target(
        ("src/filegate/tools/readguard/changed_lines.py",),
        (
            "tests/tools/test_read_guard_lines.py",
            # A refusal that shows the changed lines tells the change: no notice repeats it.
            "tests/tools/test_change_notices.py",
            # StrReplaceFile with no ledger at all (--no-read-guard): the line guard stays out.
            "tests/tools/test_read_guard.py::test_read_guard_off_restores_writing_without_a_read",
        ),
        90.0,
    ),
    # The documents' notebook view (SPEC §8.6): ReadFile's cells of an .ipynb, against its
    # in-process tests (the slow one left out).
    "notebook": Target(
        ("src/filegate/tools/documents/notebook.py",),
        ("tests/tools/test_read_notebook.py", "-m", "not slow"),
        90.0,
    ),
    # WriteFile's placeholder guard (SPEC §8.4): the omission comments it refuses, against its
    # corpus and one overwrite through a client.
    "placeholders": Target(
        ("src/filegate/tools/edit/placeholders.py",), ("tests/tools/test_placeholders.py",), 90.0
    ),
    # StrReplaceFile's cell edits of a notebook (SPEC §8.6), through in-memory clients.
    "notebookedit": Target(
        ("src/filegate/tools/edit/notebook_edit.py",), ("tests/tools/test_notebook_edit.py",), 90.0
    ),
    # The documents' PDF text (SPEC §8.6): pypdf's side as the worker runs it (called in-process
    # by tests/media/test_pdf_text.py) and ReadFile's page view, against the in-process tests.
    "pdf": Target(
        ("src/filegate/media/pdf.py", "src/filegate/tools/documents/pdf_view.py"),
        ("tests/media/test_pdf_text.py", "tests/tools/test_read_pdf.py", "-m", "not slow"),
        90.0,
    ),
    # ReadMediaFile's pages of a PDF as images (SPEC §8.6): PDFium's side as the worker runs it
    # (called in-process by tests/media/test_pdf_pages.py) and the tool's side, against the
    # in-process tests, the tool's slow-marked ones too (the page cap, the shared budget and Kimi
    # Code's parts are only tested there) but for the bombs, which take seconds each.
    "pdfimages": Target(
        ("src/filegate/media/pdf_pages.py", "src/filegate/tools/documents/pdf_images.py"),
        (
            "tests/media/test_pdf_pages.py",
            "tests/tools/test_read_pdf_images.py",
            "-m",
            "slow or not slow",
            "--deselect",
            "tests/tools/test_read_pdf_images.py::test_pdf_page_bombs_stay_within_bounds_and_the_server_stays_small",
        ),
        90.0,
    ),
    # Grants (SPEC §11, issue 52): what a grant covers and its sealed handle (policy/), the key
    # and the record `filegate rules` lists (fsio/), and what a question offers and a granted
    # answer gives (server/), against their seam tests and the in-memory clients' (issue 55).
    "grants": Target(
        (
            "src/filegate/policy/grants.py",
            "src/filegate/fsio/grantstore.py",
            "src/filegate/server/grants.py",
        ),
        (
            "tests/policy/test_grants.py",
            "tests/fsio/test_grantstore.py",
            "tests/server/test_grants.py",
            # It reads README.md, which mutmut does not copy into mutants/.
            "--deselect",
            "tests/server/test_grants.py::test_the_readmes_transcript_is_the_form_a_client_receives",
        ),
        90.0,
    ),
    # SPEC §9 (issue 55): one text block with its closing lines (server/render.py), each
    # client's budgets (policy/budget.py), the tools' _meta, instructions and short schemas
    # (server/app.py), against the tests that read them as a client receives them.
    "reach": Target(
        ("src/filegate/server/render.py", "src/filegate/policy/budget.py", "src/filegate/server/app.py"),
        (
            "tests/server/test_reach.py",
            "tests/server/test_render.py",
            "tests/server/test_text_only.py",
            "tests/server/test_tool_list.py",
            "tests/server/test_unexpected_errors.py",
            "tests/policy/test_result_budget.py",
        ),
        90.0,
        only=(
            "filegate.server.render.*",
            "filegate.policy.budget.*",
            *(
                f"filegate.server.app.{name}__mutmut_*"
                for name in (
                    "x_json_schema",
                    "x__without_null",
                    "x__validation_message",
                    "xǁFilegateToolǁ*",
                    "x_tool_meta",
                    "x_instructions",
                    "x_tool_specs",
                    "x_build_server",
                )
            ),
        ),
        scope="of `server/app.py`, the tools as listed and called, not logging's set-up or the start",
    ),
    # SPEC §10 Rewind and Review (issue 55): UndoWrite(since=…) (its plan in tools/review/, its
    # path in tools/undo_write.py: that module's functions of the rewind only, the rest being
    # UndoWrite by id), Changes, and the one reader of git, against the tests that drive them
    # through real clients and the terminal.
    "rewind": Target(
        (
            "src/filegate/tools/changes.py",
            "src/filegate/tools/review/*",
            "src/filegate/fsio/githead.py",
            "src/filegate/tools/undo_write.py",
        ),
        (
            "tests/tools/test_rewind.py",
            "tests/tools/test_changes.py",
            "tests/test_review_cli.py",
            "tests/fsio/test_githead.py",
            "tests/tools/test_rewind_words.py",
            "tests/tools/test_review_parts.py",
        ),
        90.0,
        only=(
            "filegate.tools.changes.*",
            "filegate.tools.review.*",
            "filegate.fsio.githead.*",
            *(
                f"filegate.tools.undo_write.{name}__mutmut_*"
                for name in (
                    "x__rewind",
                    "x__changed_refusal",
                    "x__force_diff",
                    "x__rewind_member",
                    "xǁUndoWriteParamsǁ_one_of",
                )
            ),
        ),
        scope="of `tools/undo_write.py`, the rewind's functions only",
    ),
    # ApplyPatch's pure half (SPEC §10, issue 55): the V4A parser, the plan of both forms and
    # the hunks' narrowing, against their pure tests (the tool's own go through patchtool).
    "patchparse": Target(
        (
            "src/filegate/tools/patch/v4a.py",
            "src/filegate/tools/patch/plan.py",
            "src/filegate/tools/patch/hunks.py",
        ),
        ("tests/tools/test_patch_parse.py", "tests/tools/test_patch_hunks.py"),
        90.0,
    ),
    # ApplyPatch's all or nothing (SPEC §10, issue 55): the gate of a set's paths (policy/) and
    # the commit with its restore and crash recovery (fsio/), against the tool's tests through
    # in-memory clients and the set killed at each step (a forked child: the mutant runs there
    # too). The tool and its route (tools/apply_patch.py, tools/patch/run.py) are "patchtool":
    # together the three were 2,035 mutants, hours at --jobs 1 on this machine.
    "changeset": Target(
        ("src/filegate/policy/changeset.py", "src/filegate/fsio/changeset.py"),
        (
            "tests/tools/test_apply_patch.py",
            "tests/tools/test_patch_sets.py",
            "tests/stress/test_set_kills.py",
            "-m",
            "not slow",
        ),
        90.0,
    ),
    # ApplyPatch the tool (SPEC §10, issue 55): its plan's members and answer, and the set's
    # route (prepare, ask once, commit), which UndoWrite's undo of a set takes too.
    "patchtool": Target(
        ("src/filegate/tools/apply_patch.py", "src/filegate/tools/patch/run.py"),
        (
            "tests/tools/test_apply_patch.py",
            "tests/tools/test_patch_sets.py",
            "tests/tools/test_undo_write.py",
            "-m",
            "not slow",
        ),
        90.0,
    ),
    "grep": Target(
        tuple(f"src/filegate/tools/grep/{name}.py" for name in ("parse", "walk", "plan")),
        tuple(
            f"tests/tools/test_{name}.py"
            for name in (
                "grep",
                "grep_by_path",
                "grep_fifo",
                "grep_pinned",
                "grep_sandbox",
                "grep_rules",
                "grep_walk",
                "grep_pump",
                "grep_spawn",
                "where_facilities_are_missing",
            )
        ),
        85.0,
    ),
}

# mutmut 3 reads [tool.mutmut] through this function; the launcher below swaps it for one that
# answers from the environment, so a target never needs pyproject.toml edited.
_LAUNCHER = """
import json, os, sys
import mutmut.configuration as configuration
_base = configuration._config_reader
def _reader():
    base = _base()
    override = json.loads(os.environ["FILEGATE_MUTMUT_CONFIG"])
    extra = override.pop("pytest_add_cli_args_extra", [])
    def read(key, default):
        if key in override:
            return override[key]
        value = base(key, default)
        return value + extra if key == "pytest_add_cli_args" else value
    return read
configuration._config_reader = _reader
from mutmut.__main__ import cli
sys.argv[0] = "mutmut"
cli()
"""


def exclusions(target: Target | None) -> int:
    # One per excluded line or block: a "start" counts, its "end" does not.
    pragma = re.compile(r"#\s*pragma:\s*no mutate(?!\s*:?\s*end)")
    if target is None:
        paths = [path for d in MUTATED for path in sorted(d.rglob("*.py"))]
    else:
        paths = sorted({path for glob in target.mutate for path in ROOT.glob(glob) if path.suffix == ".py"})
    return sum(len(pragma.findall(path.read_text("utf-8"))) for path in paths)


def previous(mutmut: list[str], verdicts: str, env: dict[str, str]) -> list[str]:
    """The mutants of the previous run with one of ``verdicts`` (``mutmut results --all``)."""
    listed = subprocess.run(
        [*mutmut, "results", "--all", "true"], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    ).stdout
    return re.findall(rf"^\s*(\S+): (?:{verdicts})$", listed, re.MULTILINE)


DOCS = ROOT / "docs" / "TESTING.md"
RESULTS = ROOT / "docs" / "mutation-results.json"
# The target pyproject.toml's [tool.mutmut] configures (no --target): its key in the results.
DEFAULT_KEY = "policy-fsio"
# A mutant's name is its module, then x_<function> or xǁ<Class>ǁ<method>, then __mutmut_<n>.
MODULE_OF_MUTANT = re.compile(r"^(?P<module>[\w.]+?)\.x[_ǁ]")
KILLED = ("killed", "timeout")
SURVIVED = ("survived", "no tests", "suspicious")
NOT_COUNTED = ("skipped", "not checked")


def verdicts_of(listing: str) -> list[tuple[str, str]]:
    """``mutmut results --all true`` as (mutant, verdict), the counted ones only."""
    return [
        (name, verdict)
        for name, verdict in re.findall(r"^\s*(\S+): (.+?)\s*$", listing, re.MULTILINE)
        if MODULE_OF_MUTANT.match(name) and verdict not in NOT_COUNTED
    ]


def in_scope(listing: str, target: Target | None) -> str:
    """``listing``'s lines of the mutants in ``target``'s ``only`` (all of them without one)."""
    if target is None or not target.only:
        return listing

    def wanted(line: str) -> bool:
        name = line.strip().split(":")[0]
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in target.only)

    return "\n".join(filter(wanted, listing.splitlines()))


def module_of(name: str) -> str:
    found = MODULE_OF_MUTANT.match(name)
    assert found is not None, name
    return found["module"].removeprefix("filegate.")


def by_module(listing: str) -> dict[str, tuple[int, int]]:
    """``mutmut results --all true`` as {module: (killed, counted)}; a timeout counts as killed."""
    counts: dict[str, tuple[int, int]] = {}
    for name, verdict in verdicts_of(listing):
        module = module_of(name)
        killed, counted = counts.get(module, (0, 0))
        counts[module] = (killed + (verdict in KILLED), counted + 1)
    return counts


def record(results: dict[str, Any], key: str, listing: str, run: str) -> dict[str, Any]:
    """``results`` with target ``key``'s entry set from a run's listing: the run, its figures by
    module and in total, and its survivors by name, each with the explanation it had if it
    survived before ("" if new). Explanations by kind ("groups") written before names were kept
    stay, marked with the run they describe. Other targets are left as they are."""
    before = results.get(key, {})
    listed = verdicts_of(listing)
    modules = {module: {"killed": k, "mutants": n} for module, (k, n) in sorted(by_module(listing).items())}
    killed = sum(1 for _, verdict in listed if verdict in KILLED)
    timeouts = sum(1 for _, verdict in listed if verdict == "timeout")
    known = before.get("survivors", {})
    # What described the previous run's modules and survivors goes; notes and groups stay.
    entry = {k: v for k, v in before.items() if k not in ("renamed", "unlisted", "killed_since", "partial")}
    entry.update(
        run=run,
        modules=modules,
        total={"killed": killed, "mutants": len(listed), "timeouts": timeouts},
        survivors={name: known.get(name, "") for name, verdict in sorted(listed) if verdict in SURVIVED},
    )
    unrun = len(re.findall(r"^\s*\S+: not checked\s*$", listing, re.MULTILINE))
    if unrun:  # mutants of the target never run (an interrupted run): its figures are partial
        entry["partial"] = (
            f"{len(listed)} of the {len(listed) + unrun:,} mutants in scope run; {unrun:,} not checked"
        )
    if before.get("groups") and "groups_as_of" not in before:
        entry["groups_as_of"] = before.get("run", "")
    entry.setdefault("groups", [])
    return {**results, key: entry}


def target_of(key: str) -> Target:
    """A target by its key in the results, the default one's from pyproject.toml."""
    if key != DEFAULT_KEY:
        return TARGETS[key]
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    tests = tuple(config["pytest_add_cli_args_test_selection"])
    return Target(tuple(config["only_mutate"]), tests, THRESHOLD)


def _shown(paths: tuple[str, ...], prefix: str) -> str:
    files, options = split_options(paths)
    shown = ", ".join(f"`{p.removeprefix(prefix)}`" for p in files)
    pairs = zip(options[::2], options[1::2], strict=True)
    extra = "; ".join(f"{flag} `{value.removeprefix(prefix)}`" for flag, value in pairs)
    return shown + (f" ({extra})" if extra else "")


PARTIAL = "a partial run: only some of the target's mutants were run (`partial` in the data says which)"
MOVED = "measured before some of its modules moved or went (`renamed` in the data), not run since"


def scores_table(results: dict[str, Any]) -> str:
    """docs/TESTING.md's table: each target, what it mutates, against which tests, its figures."""
    rows = [
        "| target | mutates (`src/filegate/`) | against (`tests/`) | killed | mutants | rate | threshold |",
        "|---|---|---|---|---|---|---|",
    ]
    moved = partial = False
    for key in [DEFAULT_KEY, *sorted(TARGETS)]:
        target = target_of(key)
        entry = results.get(key, {})
        killed, counted = entry.get("total", {}).get("killed"), entry.get("total", {}).get("mutants")
        if killed is not None and counted:
            figures = f"{killed:,} | {counted:,} | {100.0 * killed / counted:.1f} %"
        else:
            figures = "– | – | not recorded"
        if entry.get("renamed"):
            figures, moved = figures + " †", True
        if entry.get("partial"):
            figures, partial = figures + " ‡", True
        mutates, tests = _shown(target.mutate, "src/filegate/"), _shown(target.tests, "tests/")
        mutates += f" ({target.scope})" if target.scope else ""
        rows.append(f"| {key} | {mutates} | {tests} | {figures} | {target.threshold:g} % |")
    return (
        "\n".join(rows)
        + "\n"
        + (f"\n† {MOVED}.\n" if moved else "")
        + (f"\n‡ {PARTIAL}.\n" if partial else "")
    )


def markers(key: str) -> tuple[str, str]:
    begin = f"<!-- mutation:{key} (written by scripts/mutation_score.py --write-docs) -->\n"
    return begin, f"<!-- /mutation:{key} -->\n"


def with_section(doc: str, key: str, table: str) -> str:
    """``doc`` with the section between ``key``'s markers replaced by ``table``."""
    begin, end = markers(key)
    start = doc.index(begin) + len(begin)
    return doc[:start] + table + doc[doc.index(end, start) :]


def load_results() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(RESULTS.read_text("utf-8"))
    return loaded


def write_docs(results: dict[str, Any]) -> None:
    data = json.dumps(dict(sorted(results.items())), indent=2, ensure_ascii=False)
    RESULTS.write_text(data + "\n", "utf-8")
    DOCS.write_text(with_section(DOCS.read_text("utf-8"), "scores", scores_table(results)), "utf-8")


def split_options(tests: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """A target's test paths, and its pytest options (``-m EXPR``, ``--deselect ID``: each with
    its value). mutmut passes the selection only to its whole-suite runs; each mutant's run gets
    test ids plus ``pytest_add_cli_args``. So the options go there: otherwise pyproject's
    ``-m 'not slow'`` deselects a target's slow tests by id in every mutant's run."""
    paths: list[str] = []
    options: list[str] = []
    it = iter(tests)
    for arg in it:
        if arg.startswith("-"):
            options += [arg, next(it)]
        else:
            paths.append(arg)
    return paths, options


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="reuse mutants/ and mutmut's cached results")
    parser.add_argument(
        "--rerun-survivors", action="store_true", help="run the previous run's survivors again"
    )
    parser.add_argument(
        "--rerun-timeouts",
        action="store_true",
        help="run the previous run's timeouts again too (a loaded machine can time a mutant out)",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="mutants run at once")
    parser.add_argument("--threshold", type=float, help="lowest kill rate, percent")
    parser.add_argument(
        "--target", choices=sorted(TARGETS), help="mutate a named target instead of policy/ and fsio/"
    )
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help="after the run, record it in docs/mutation-results.json and render docs/TESTING.md's table",
    )
    parser.add_argument(
        "--render-docs",
        action="store_true",
        help="only render docs/TESTING.md's table from docs/mutation-results.json (after editing it)",
    )
    parser.add_argument(
        "--results",
        action="store_true",
        help="list the last run's survivors (for a --target run, through that target's configuration)",
    )
    args = parser.parse_args()
    if args.render_docs:
        write_docs(load_results())
        return 0
    target = TARGETS[args.target] if args.target else None
    threshold = args.threshold if args.threshold is not None else target.threshold if target else THRESHOLD

    mutmut = [sys.executable, "-m", "mutmut"]
    env = dict(os.environ)
    if target is not None:
        mutmut = [sys.executable, "-c", _LAUNCHER]
        paths, options = split_options(target.tests)
        env["FILEGATE_MUTMUT_CONFIG"] = json.dumps(
            {
                "only_mutate": list(target.mutate),
                "pytest_add_cli_args_test_selection": paths,
                "pytest_add_cli_args_extra": options,
            }
        )
    if args.results:
        # mutmut reads its configuration for the listing too: give it the target's.
        return subprocess.run([*mutmut, "results"], cwd=ROOT, env=env).returncode
    names: list[str] = []
    verdicts = [v for v, on in (("survived|no tests|suspicious", args.rerun_survivors),
                                 ("timeout", args.rerun_timeouts)) if on]  # fmt: skip
    if verdicts:
        names = previous(mutmut, "|".join(verdicts), env)
    else:
        if not args.keep:
            shutil.rmtree(ROOT / "mutants", ignore_errors=True)
        names = list(target.only) if target is not None else []
        if args.keep and names:  # mutmut runs named mutants again: name the scope's unrun ones
            unrun = "\n".join(f"{name}: x" for name in previous(mutmut, "not checked", env))
            names = [line.split(":")[0] for line in in_scope(unrun, target).splitlines()]
    # Every forked mutant run is its own pytest session: numbered temp dirs under a root of
    # this run's own (a fixed --basetemp would be wiped by each session under the others).
    env.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.mkdtemp(prefix="filegate-mutmut-"))
    if names or not (args.keep and target is not None and target.only):
        run = subprocess.run([*mutmut, "run", "--max-children", str(args.jobs), *names], cwd=ROOT, env=env)
        if run.returncode != 0:
            print(f"mutation: mutmut run failed (exit {run.returncode})")
            return run.returncode
    # The figures from mutmut's listing, as docs record them: every verdict but "skipped" and
    # "not checked", of the mutants in the target's scope (``only``).
    listing = [*mutmut, "results", "--all", "true"]
    listed = subprocess.run(listing, cwd=ROOT, env=env, capture_output=True, text=True, check=True).stdout
    listed = in_scope(listed, target)
    found = [verdict for _, verdict in verdicts_of(listed)]
    counted, killed = len(found), sum(verdict in KILLED for verdict in found)
    rate = 100.0 * killed / counted if counted else 0.0
    timeouts = found.count("timeout")
    print(
        f"mutation: {killed} of {counted} mutants killed ({rate:.1f} %; {timeouts} by timeout), "
        f"{found.count('survived')} survived, {found.count('no tests')} reached by no test, "
        f"{found.count('suspicious')} suspicious; {exclusions(target)} `# pragma: no mutate` exclusions. "
        f"Survivors: {Path(sys.argv[0]).name} --results{' --target ' + args.target if args.target else ''}"
    )
    if args.write_docs:
        how = "--rerun-survivors" if args.rerun_survivors else "--keep" if args.keep else "fresh"
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        note = f"{when}, {how}, --jobs {args.jobs}, load {os.getloadavg()[0]:.1f}"
        write_docs(record(load_results(), args.target or DEFAULT_KEY, listed, note))
    return 0 if rate >= threshold else 1


if __name__ == "__main__":
    sys.exit(main())
