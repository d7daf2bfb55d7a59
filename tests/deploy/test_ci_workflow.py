"""The GitHub Actions workflow for the real systems (issue 15 item 5) stays valid: it parses,
runs the suite on Linux, macOS and Windows, and runs the simulated-platform job with every
facility filegate knows how to take away."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from filegate.fsio import platform

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "test.yml"


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
    assert all(f"tests/{d}" in run for d in ("fsio", "policy", "tools", "security"))


def test_lint_and_types_are_checked() -> None:
    run = steps_text(load()["jobs"]["lint"])
    assert "ruff check src tests" in run and "ruff format --check src tests" in run and "mypy" in run


def test_root_and_mount_tests_fail_where_the_run_promises_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 26: a test that needs root or a mount skips, saying why, where the run does not
    have them, and fails where it promises them (.ci/run sets FILEGATE_CI_HAS as root)."""
    from tests.tooling import CI_HAS_ENV, needs

    monkeypatch.delenv(CI_HAS_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="needs root; .ci/run runs it as root"):
        needs("root", "giving a file away needs root")
    monkeypatch.setenv(CI_HAS_ENV, "root,mount")
    for what in ("root", "mount"):
        with pytest.raises(pytest.fail.Exception, match=f"promises {what}"):
            needs(what, "x")
    assert "FILEGATE_CI_HAS=root,mount" in CI_RUN.read_text()


# --- the workflow runs what .ci/run runs (issue 26) -----------------------------------------

CI_RUN = WORKFLOW.parents[2] / ".ci" / "run"
# Left out of the comparison: how pytest is started and its cache (the workflow has no use
# for it); the rest of each command (env, markers, folders, coverage flags) must match.
NOISE = {"-q", "-p", "no:cacheprovider"}


def _command(env: dict[str, str], words: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    filegate_env = tuple(sorted(f"{k}={v}" for k, v in env.items() if k.startswith("FILEGATE_")))
    return filegate_env, tuple(w for w in words if w not in NOISE)


def ci_run_pytests() -> set[tuple[tuple[str, ...], tuple[str, ...]]]:
    found = set()
    text = CI_RUN.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        for part in line.split("&&"):
            words = shlex.split(part.split("#", 1)[0]) if "pytest" in part else []
            if ".venv/bin/pytest" not in words:
                continue
            at = words.index(".venv/bin/pytest")
            env = dict(w.split("=", 1) for w in words[:at] if "=" in w)
            found.add(_command(env, words[at + 1 :]))
    return found


def workflow_pytests() -> set[tuple[tuple[str, ...], tuple[str, ...]]]:
    found = set()
    for job in load()["jobs"].values():
        for step in job["steps"]:
            for part in str(step.get("run", "")).replace("\\\n", " ").split("&&"):
                words = shlex.split(part)
                if words[:3] != ["python", "-m", "pytest"]:
                    continue
                env = {**job.get("env", {}), **step.get("env", {})}
                found.add(_command(env, words[3:]))
    return found


def test_the_workflow_runs_the_same_pytest_commands_as_ci_run() -> None:
    ci, workflow = ci_run_pytests(), workflow_pytests()
    assert len(ci) >= 4  # the parse found the README's command, slow, coverage, simulated
    assert ci == workflow, {"only in .ci/run": ci - workflow, "only in the workflow": workflow - ci}


def test_the_simulated_runs_include_security_and_server() -> None:
    simulated = [words for env, words in ci_run_pytests() if any("FILEGATE_SIMULATE=" in e for e in env)]
    assert simulated and all({"tests/security", "tests/server"} <= set(words) for words in simulated)


def test_the_release_workflow_publishes_by_trusted_publishing_only() -> None:
    """Ready for when the accounts exist: a version tag builds and checks the wheel, the sdist
    and a bundle for each platform Claude Desktop runs on, and PyPI is reached by OIDC, never with a stored password or token."""
    path = WORKFLOW.with_name("release.yml")
    body = path.read_text(encoding="utf-8")
    release = yaml.safe_load(body)
    assert release[True] == {"push": {"tags": ["v*"]}}
    jobs = release["jobs"]
    build = steps_text(jobs["build"])
    assert "python -m build" in build and "twine check --strict dist/*" in build
    assert "scripts/build_mcpb.py" in build
    for target in ("linux-x86_64", "macos-arm64", "macos-x86_64", "windows-x64"):
        assert target in build, f"no {target} bundle"
    assert "rm dist/*.mcpb" in steps_text(jobs["pypi"])
    pypi = jobs["pypi"]
    assert pypi["permissions"] == {"id-token": "write"} and pypi["environment"] == "pypi"
    assert "pypa/gh-action-pypi-publish" in steps_text(pypi)
    assert "password" not in body and "secrets." not in body
    assert release["permissions"] == {"contents": "read"}  # write only where a job needs it
