"""A test that needs an outside tool (the MCP Inspector, Kimi CLI, the kernel corpus) and cannot
have it: skipped on a developer's machine, with the reason, but failed in CI (``CI`` set, as
``.ci/run`` runs), where every such tool must be there — a CI run must not pass by skipping."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


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
