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

mutmut keeps a mutant's verdict until its function changes, so a test added after a run kills
nothing until the survivors are run again: ``--rerun-survivors`` runs just those (with the
tests as they are now) on top of the previous run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MUTATED = (ROOT / "src/filegate/policy", ROOT / "src/filegate/fsio")
THRESHOLD = 90.0


def exclusions() -> int:
    # One per excluded line or block: a "start" counts, its "end" does not.
    pragma = re.compile(r"#\s*pragma:\s*no mutate(?!\s*:?\s*end)")
    return sum(
        len(pragma.findall(path.read_text("utf-8"))) for d in MUTATED for path in sorted(d.rglob("*.py"))
    )


def previous(mutmut: list[str], verdicts: str) -> list[str]:
    """The mutants of the previous run with one of ``verdicts`` (``mutmut results --all``)."""
    listed = subprocess.run(
        [*mutmut, "results", "--all", "true"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return re.findall(rf"^\s*(\S+): (?:{verdicts})$", listed, re.MULTILINE)


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
    parser.add_argument("--threshold", type=float, default=THRESHOLD, help="lowest kill rate, percent")
    args = parser.parse_args()

    mutmut = [sys.executable, "-m", "mutmut"]
    names: list[str] = []
    verdicts = [v for v, on in (("survived|no tests|suspicious", args.rerun_survivors),
                                 ("timeout", args.rerun_timeouts)) if on]  # fmt: skip
    if verdicts:
        names = previous(mutmut, "|".join(verdicts))
    elif not args.keep:
        shutil.rmtree(ROOT / "mutants", ignore_errors=True)
    env = dict(os.environ)
    # Every forked mutant run is its own pytest session: numbered temp dirs under a root of
    # this run's own (a fixed --basetemp would be wiped by each session under the others).
    env.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.mkdtemp(prefix="filegate-mutmut-"))
    run = subprocess.run([*mutmut, "run", "--max-children", str(args.jobs), *names], cwd=ROOT, env=env)
    if run.returncode != 0:
        print(f"mutation: mutmut run failed (exit {run.returncode})")
        return run.returncode
    subprocess.run([*mutmut, "export-cicd-stats"], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    stats = json.loads((ROOT / "mutants/mutmut-cicd-stats.json").read_text("utf-8"))
    counted = stats["total"] - stats["skipped"]
    killed = stats["killed"] + stats["timeout"]
    rate = 100.0 * killed / counted if counted else 0.0
    print(
        f"mutation: {killed} of {counted} mutants killed ({rate:.1f} %; {stats['timeout']} by timeout), "
        f"{stats['survived']} survived, {stats['no_tests']} reached by no test, "
        f"{stats['suspicious']} suspicious; {exclusions()} `# pragma: no mutate` exclusions. "
        f"Survivors: .venv/bin/mutmut results"
    )
    return 0 if rate >= args.threshold else 1


if __name__ == "__main__":
    sys.exit(main())
