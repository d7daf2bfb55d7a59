"""Outside tools the tests need (the MCP Inspector, real agents, packaging tools).

A test that needs one and cannot have it is skipped on a developer's machine, with the reason,
but failed in CI (``CI`` set, as ``.ci/run`` runs), where every such tool must be there — a CI
run must not pass by skipping.

Tools from a package registry are installed once into a cache outside the repository by
:func:`cached_install`: under a file lock (so two tests, two threads or two test runs never
install the same thing at once: the second waits for the first), into a fresh temporary
directory beside the final one, which is renamed into place only when the install works.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

INSTALL_S = 900  # hang guard on one install from a registry
# pytest-timeout for a test that may install from a registry on a cold cache (its fixture's
# install counts towards the test's time): past the install's own guard, so that one speaks.
INSTALL_TIMEOUT_S = INSTALL_S + 300


def line_count(src: Any, budget_s: float | None = None) -> Any:
    """The number of lines of an open file (fsio.linecount.PendingCount, waited for and closed)."""
    from filegate.fsio.linecount import PendingCount

    pending = PendingCount(src, budget_s)
    try:
        return pending.result()
    finally:
        pending.close()


def tool_missing(reason: str) -> NoReturn:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} — CI must have it")
    pytest.skip(reason)


# What the CI run promises to have (comma-separated; `.ci/run` sets "root,mount" when it runs as
# root): a test that needs one of these fails there instead of skipping.
CI_HAS_ENV = "FILEGATE_CI_HAS"


def ci_has(what: str) -> bool:
    return what in os.environ.get(CI_HAS_ENV, "").split(",")


def needs(what: str, reason: str) -> NoReturn:
    """This test cannot run here for want of ``what`` ("root" or "mount"): skipped with the
    reason where the run does not promise it, failed where it does (``FILEGATE_CI_HAS``)."""
    if ci_has(what):
        pytest.fail(f"{reason} — this CI run promises {what} ({CI_HAS_ENV}) but does not have it here")
    pytest.skip(f"{reason} (needs {what}; .ci/run runs it as root)")


def cache_root(name: str, override: str) -> Path:
    """``$override``, else ``$XDG_CACHE_HOME/name`` (default ``~/.cache/name``)."""
    home_cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(os.environ.get(override) or home_cache / name)


def cached_install(final: Path, build: Callable[[Path], None], works: Callable[[Path], bool]) -> Path:
    """``final``, made by ``build(tmp)`` once: under ``final``'s lock file, in a temporary
    directory of its own renamed into place after ``works(tmp)`` said yes.

    flock locks an open file description, so threads of one process exclude each other too.
    """
    if works(final):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f".{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if works(final):  # made by whoever held the lock before us
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
        try:
            build(tmp)
            if not works(tmp):
                raise AssertionError(f"the install into {final.name} does not run")
            shutil.rmtree(final, ignore_errors=True)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def npm_install(spec: str, into: Path) -> None:
    """``npm install spec`` into the directory ``into`` (fails the test with npm's words)."""
    (into / "package.json").write_text('{"private": true}\n')
    try:
        done = subprocess.run(
            ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", spec],
            cwd=into, capture_output=True, text=True, timeout=INSTALL_S,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AssertionError(f"npm install {spec}: {exc}") from exc
    if done.returncode:
        raise AssertionError(f"npm install {spec} exited {done.returncode}: {done.stderr[-2000:]}")


def npm_missing() -> str | None:
    if shutil.which("npm") is None or shutil.which("node") is None:
        return "npm/node are not installed"
    return None


def pip_tool(package: str, version: str, binary: str) -> Path:
    """A tool from PyPI that is one executable (uv): `pip install --target` once into the cache."""

    def build(into: Path) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(into), f"{package}=={version}"],
            capture_output=True, text=True, timeout=INSTALL_S,
        )  # fmt: skip
        if done.returncode:
            raise AssertionError(f"pip install {package}=={version}: {done.stderr[-2000:]}")

    final = cache_root("filegate-tools", "FILEGATE_TOOLS_CACHE") / "pypi" / f"{package}-{version}"
    return cached_install(final, build, lambda p: (p / "bin" / binary).exists()) / "bin" / binary
