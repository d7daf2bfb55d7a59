"""Kimi CLI 1.51.0 driven without a model: its hidden ``_scripted_echo`` provider plays a fixed
list of tool calls (KIMI-REFERENCE §11), and ``--output-format stream-json`` gives back every
tool result as Kimi's model would see it.

Kimi needs Python ≥ 3.12 (3.12.1 crashes at start; 3.13 works) and the ``kimi-cli==1.51.0``
wheel from the package index. :func:`find_kimi` makes (once) a virtualenv for it under
``~/.cache/filegate-kimi`` and answers the reason when that cannot be had.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KIMI_VERSION = "1.51.0"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "filegate-kimi" / KIMI_VERSION
INSTALL_S = 600.0  # hang guard on the one-time install
RUN_S = 600.0  # hang guard on one Kimi run


def _candidate_pythons() -> list[str]:
    found: list[str] = []
    env = os.environ.get("FILEGATE_KIMI_PYTHON")
    if env:
        found.append(env)
    for name in ("python3.13", "python3.14", "python3.12"):
        exe = shutil.which(name)
        if exe:
            found.append(exe)
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    if pyenv.is_dir():
        for v in sorted(pyenv.iterdir(), reverse=True):
            if v.name.startswith(("3.13", "3.14", "3.12")) and v.name != "3.12.1":
                found.append(str(v / "bin" / "python3"))
    return [p for p in found if Path(p).exists()]


def find_kimi() -> tuple[Path | None, str]:
    """Kimi's executable, or ``None`` and why it cannot be had here."""
    exe = CACHE / "bin" / "kimi"
    if exe.exists():
        return exe, ""
    pythons = _candidate_pythons()
    if not pythons:
        return None, "no Python >= 3.12 (other than 3.12.1, which Kimi CLI crashes on) on this machine"
    reasons = []
    for py in pythons:
        tmp = CACHE.with_name(CACHE.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            subprocess.run([py, "-m", "venv", str(tmp)], check=True, capture_output=True, timeout=120)
            subprocess.run(
                [str(tmp / "bin" / "pip"), "install", "-q", f"kimi-cli=={KIMI_VERSION}"],
                check=True,
                capture_output=True,
                timeout=INSTALL_S,
            )
            probe = subprocess.run(
                [str(tmp / "bin" / "kimi"), "--version"], capture_output=True, text=True, timeout=60
            )
        except (subprocess.SubprocessError, OSError) as exc:
            err = getattr(exc, "stderr", b"") or b""
            tail = err.decode(errors="replace").strip().splitlines()[-1:] if isinstance(err, bytes) else []
            reasons.append(f"{py}: {type(exc).__name__} {' '.join(tail)}")
            continue
        if KIMI_VERSION not in probe.stdout:
            reasons.append(
                f"{py}: kimi --version said {probe.stdout.strip()!r} {probe.stderr.strip()[-200:]!r}"
            )
            continue
        shutil.rmtree(CACHE, ignore_errors=True)
        tmp.rename(CACHE)
        # The venv's scripts name their interpreter by absolute path: rewrite after the move.
        for script in (CACHE / "bin").iterdir():
            if script.is_file() and not script.is_symlink():
                data = script.read_bytes()
                if data.startswith(b"#!") and str(tmp).encode() in data[:300]:
                    script.write_bytes(data.replace(str(tmp).encode(), str(CACHE).encode(), 1))
        return exe, ""
    return None, f"kimi-cli=={KIMI_VERSION} could not be installed: " + "; ".join(reasons)


@dataclass
class Result:
    """One tool result, as the model reads it: error flag, texts in order, media as (mime, data)."""

    error: bool
    texts: list[str] = field(default_factory=list)
    media: list[str] = field(default_factory=list)

    def canonical(self) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
        return (self.error, tuple(self.texts), tuple(self.media))


MCP_ERROR = (
    "<system>ERROR: Tool returned an error. The output may be error message or incomplete output</system>"
)


def parse_result(content: Any) -> Result:
    """Kimi's tool message → Result. A built-in's summary is a ``<system>…</system>`` part placed
    before its output; an MCP tool's text blocks come as the server sent them (filegate puts the
    summary last), so a built-in's summary is moved last to compare like with like."""
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    error = False
    summary: list[str] = []
    texts: list[str] = []
    media: list[str] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            t = part["text"]
            if t == MCP_ERROR:
                error = True
            elif t.startswith("<system>") and t.endswith("</system>"):
                inner = t[len("<system>") : -len("</system>")]
                if inner.startswith("ERROR: "):
                    error = True
                    inner = inner[len("ERROR: ") :]
                summary.append(inner)
            elif t:
                texts.append(t)
        else:
            media.append(json.dumps(part, sort_keys=True))
    return Result(error, [t for t in texts + summary if t], media)


def run_kimi(
    kimi: Path,
    workdir: Path,
    calls: list[tuple[str, str, dict[str, Any]]],
    home: Path,
    mcp_servers: dict[str, Any],
) -> dict[str, Result]:
    """Play ``calls`` (id, tool, args) in one Kimi session; the results by call id."""
    home.mkdir(parents=True, exist_ok=True)
    scripts = [
        "tool_call: " + json.dumps({"id": cid, "name": tool, "arguments": json.dumps(args)})
        for cid, tool, args in calls
    ] + ["text: done"]
    (home / "scripts.json").write_text(json.dumps(scripts))
    cfg = {
        "default_model": "s",
        "models": {
            "s": {
                "provider": "p",
                "model": "scripted_echo",
                # Large enough that Kimi never compacts the context (which would ask the model).
                "max_context_size": 50_000_000,
                "capabilities": ["image_in", "video_in"],
            }
        },
        "providers": {
            "p": {
                "type": "_scripted_echo",
                "base_url": "",
                "api_key": "",
                "env": {"KIMI_SCRIPTED_ECHO_SCRIPTS": str(home / "scripts.json")},
            }
        },
    }
    (home / "cfg.json").write_text(json.dumps(cfg))
    (home / "mcp.json").write_text(json.dumps({"mcpServers": mcp_servers}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIMI_", "FILEGATE_"))}
    # Kimi's own Grep looks for rg on PATH before it tries to download one: give it ours.
    env["PATH"] = sysconfig.get_path("scripts") + os.pathsep + env.get("PATH", "")
    env["HOME"] = str(home)
    proc = subprocess.run(
        [str(kimi), "--print", "--yolo", "--config-file", str(home / "cfg.json"),
         "--mcp-config-file", str(home / "mcp.json"), "--work-dir", str(workdir), "-p", "go",
         "--output-format", "stream-json"],
        capture_output=True, text=True, timeout=RUN_S, env=env, cwd=str(workdir),
    )  # fmt: skip
    results: dict[str, Result] = {}
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("role") == "tool":
            results[msg["tool_call_id"]] = parse_result(msg["content"])
    if len(results) != len(calls):
        raise AssertionError(
            f"Kimi answered {len(results)} of {len(calls)} calls (exit {proc.returncode}): {proc.stderr[-3000:]}"
        )
    return results
