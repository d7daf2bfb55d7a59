"""The Claude Desktop bundle's manifest (scripts/build_mcpb.py), checked in the default set: every
setting it passes reaches filegate's Settings. tests/test_mcpb.py (slow) builds, unpacks and
starts the real bundle; this reads the manifest the build writes, with no npm and no bundle."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from filegate.cli import parse_settings
from filegate.settings import Settings
from tests.test_mcpb import build_script

USER_CONFIG_REF = re.compile(r"\$\{user_config\.([A-Za-z0-9_]+)\}")


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    made: dict[str, Any] = build_script().manifest(["3.11"], "linux")
    return made


def mcp_config(manifest: dict[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = manifest["server"]["mcp_config"]
    return config


def test_every_env_key_is_a_filegate_setting(manifest: dict[str, Any]) -> None:
    prefix = Settings.model_config.get("env_prefix", "")
    env = mcp_config(manifest)["env"]
    assert env, "the manifest passes no setting through the environment"
    for key in env:
        assert key.startswith(prefix) and key.removeprefix(prefix).lower() in Settings.model_fields, (
            f"{key} is not a variable filegate's Settings reads"
        )


def test_every_user_config_reference_is_declared(manifest: dict[str, Any]) -> None:
    config = mcp_config(manifest)
    used = {m for value in [*config["args"], *config["env"].values()] for m in USER_CONFIG_REF.findall(value)}
    assert used, "the manifest asks the user nothing"
    assert used <= set(manifest["user_config"]), f"undeclared: {sorted(used - set(manifest['user_config']))}"


def host_answers(manifest: dict[str, Any], workdir: Path) -> dict[str, str]:
    """What a user answers, as the host substitutes it (booleans as "true"/"false"): every
    answer other than its default, so each one has to reach the server to be seen there."""
    answers = {}
    for name, field in manifest["user_config"].items():
        if field["type"] == "boolean":
            answers[name] = "false" if field.get("default") else "true"
        elif field["type"] == "directory":
            answers[name] = str(workdir)
        else:
            raise AssertionError(f"no answer made for user_config type {field['type']!r} ({name}): add one")
    return answers


def test_the_users_answers_reach_the_servers_settings(
    manifest: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder and the Read-only checkbox, substituted as a host does, then parsed by
    filegate's own command line over the environment the host sets."""
    answers = host_answers(manifest, tmp_path)

    def substitute(value: str) -> str:
        value = value.replace("${__dirname}", "/bundle")
        return USER_CONFIG_REF.sub(lambda m: answers[m.group(1)], value)

    config = mcp_config(manifest)
    entry = config["args"].index("${__dirname}/" + manifest["server"]["entry_point"])
    argv = [substitute(a) for a in config["args"][entry + 1 :]]  # what the launcher hands filegate.cli
    for key in [k for k in os.environ if k.startswith("FILEGATE_")]:
        monkeypatch.delenv(key)
    for key, value in config["env"].items():
        monkeypatch.setenv(key, substitute(value))
    settings = parse_settings(argv)
    assert settings.workdir == tmp_path
    assert settings.read_only is (answers["read_only"] == "true")
    assert settings.read_only != Settings.model_fields["read_only"].default
