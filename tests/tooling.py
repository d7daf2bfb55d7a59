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
