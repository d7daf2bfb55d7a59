"""The GitHub Actions workflow for the real systems (issue 15 item 5) stays valid: it parses,
runs the suite on Linux, macOS and Windows, and runs the simulated-platform job with every
facility filegate knows how to take away."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from filegate.fsio import platform

WORKFLOW = Path(__file__).resolve().parents[1] / ".github" / "workflows" / "test.yml"


def load() -> dict[str, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def steps_text(job: dict[str, Any]) -> str:
    return "\n".join(str(step.get("run", "")) + str(step.get("uses", "")) for step in job["steps"])


def test_it_runs_on_push_and_pull_requests() -> None:
    triggers = load()[True]  # YAML 1.1 reads the bare key `on` as true
    assert set(triggers) == {"push", "pull_request"}


def test_the_suite_runs_on_linux_macos_and_windows_with_python_311() -> None:
    suite = load()["jobs"]["suite"]
    assert suite["runs-on"] == "${{ matrix.os }}"
    assert set(suite["strategy"]["matrix"]["os"]) == {"ubuntu-latest", "macos-latest", "windows-latest"}
    assert suite["strategy"]["fail-fast"] is False  # one OS failing must not hide another's result
    setup = next(s for s in suite["steps"] if str(s.get("uses", "")).startswith("actions/setup-python"))
    assert setup["with"]["python-version"] == "3.11"
    text = steps_text(suite)
    assert 'pip install -e ".[dev]"' in text and "python -m pytest" in text


def test_libmagic_is_installed_the_way_each_os_has_it() -> None:
    suite = load()["jobs"]["suite"]
    by_os = {
        s.get("if"): str(s.get("run", "")) for s in suite["steps"] if "libmagic" in str(s.get("name", ""))
    }
    assert "apt-get install" in by_os["runner.os == 'Linux'"] and "libmagic1" in by_os["runner.os == 'Linux'"]
    assert by_os["runner.os == 'macOS'"] == "brew install libmagic"
    assert "python-magic-bin" in by_os["runner.os == 'Windows'"]


def test_the_simulated_job_takes_every_facility_away_and_runs_the_fallback_suites() -> None:
    job = load()["jobs"]["simulated"]
    assert job["runs-on"] == "ubuntu-latest"
    words = job["env"][platform.SIMULATE_ENV].split(",")
    assert sorted(words) == sorted(platform.FACILITIES)
    run = steps_text(job)
    assert all(f"tests/{d}" in run for d in ("fsio", "policy", "tools"))


def test_lint_and_types_are_checked() -> None:
    run = steps_text(load()["jobs"]["lint"])
    assert "ruff check src tests" in run and "ruff format --check src tests" in run and "mypy" in run
