"""Credential files that common tools write into a repository or a home folder (SPEC §2.6, issue
22 item 1), through a real client: one row per file, each in two spellings — as the tool writes
it under an NFC parent, and with its own name's case changed under an NFD parent (macOS
archives) — and ReadFile refuses both. Then the submodule case end to end over stdio and
confined HTTP: ReadFile of `.git/modules/sub/config` is refused and Grep prints none of its
token lines, whatever path it is pointed at."""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

import pytest
from fastmcp import Client

from tests.conftest import call, connect, http_server, stdio_transport, text

TOKEN = "ghp_CANARYsubmoduleToken0042"
CONTENT = (
    f'[remote "origin"]\n\turl = https://x-access-token:{TOKEN}@github.com/o/sub.git\n'
    f"[http]\n\textraheader = AUTHORIZATION: basic {TOKEN}\n"
)

# (tool, path) — SPEC's list first, then the same kind beyond it (README names them all).
CREDENTIAL_FILES = [
    ("git submodule", "repo/.git/modules/sub/config"),
    ("git nested submodule", "repo/.git/modules/sub/modules/inner/config"),
    ("git linked worktree", "repo/.git/worktrees/wt/config"),
    ("git worktree config", "repo/.git/config.worktree"),
    ("git submodule worktree config", "repo/.git/modules/sub/config.worktree"),
    ("git bare repository", "srv/project.git/config"),
    ("git", "repo/.git/config"),
    ("git credential store", "home/.git-credentials"),
    ("git credential store (XDG)", "home/.config/git/credentials"),
    ("hg", "repo/.hg/hgrc"),
    ("hg user config", "home/.hgrc"),
    ("svn", "home/.subversion/auth/svn.simple/5671adf2865e267db74f09ba6f872c28"),
    ("gh", "home/.config/gh/hosts.yml"),
    ("npm / pnpm", "home/.npmrc"),
    ("pnpm global rc", "home/.config/pnpm/rc"),
    ("yarn berry", "repo/.yarnrc.yml"),
    ("pip", "home/.pypirc"),
    ("pip config", "home/.config/pip/pip.conf"),
    ("pip config (Windows)", "home/pip/pip.ini"),
    ("cargo", "home/.cargo/credentials.toml"),
    ("cargo (old)", "home/.cargo/credentials"),
    ("docker", "home/.docker/config.json"),
    ("kube", "home/.kube/config"),
    ("terraform login", "home/.terraform.d/credentials.tfrc.json"),
    ("terraform CLI config", "home/.terraformrc"),
    ("terraform CLI config (Windows)", "home/terraform.rc"),
    ("aws", "home/.aws/credentials"),
    ("aws sso cache", "home/.aws/sso/cache/0f1e2d.json"),
    ("aws cli cache", "home/.aws/cli/cache/3a4b5c.json"),
    ("gcloud ADC", "home/.config/gcloud/application_default_credentials.json"),
    ("gcloud credentials db", "home/.config/gcloud/credentials.db"),
    ("gcloud access tokens", "home/.config/gcloud/access_tokens.db"),
    ("gcloud legacy", "home/.config/gcloud/legacy_credentials/me@example.com/adc.json"),
    ("azure tokens", "home/.azure/accessTokens.json"),
    ("azure msal cache", "home/.azure/msal_token_cache.json"),
    ("azure service principals", "home/.azure/service_principal_entries.json"),
    ("curl / git on Windows", "home/_netrc"),
    ("curl", "home/.netrc"),
]
NFC_PARENT = "caf\u00e9"
NFD_PARENT = unicodedata.normalize("NFD", NFC_PARENT)


def _case_changed(rel: str) -> str:
    """The path with its tool-written part in upper case (the first part is the test's)."""
    first, _, rest = rel.partition("/")
    return f"{first}/{rest.upper()}"


def _spellings(rel: str) -> list[str]:
    return [f"{NFC_PARENT}/{rel}", f"{NFD_PARENT}/{_case_changed(rel)}"]


@pytest.mark.parametrize(("tool", "rel"), CREDENTIAL_FILES, ids=[t for t, _ in CREDENTIAL_FILES])
async def test_read_file_refuses_each_credential_file_in_both_spellings(
    ws: Path, mode: str, tool: str, rel: str
) -> None:
    for spelled in _spellings(rel):
        (ws / spelled).parent.mkdir(parents=True, exist_ok=True)
        (ws / spelled).write_text(CONTENT)
    async with connect(ws, mode) as c:
        for spelled in _spellings(rel):
            r = await call(c, "ReadFile", path=spelled)
            assert r.is_error and "appears to contain secrets" in text(r), (tool, spelled, text(r))
            assert TOKEN not in str(r)


NEAR_MISSES = [
    "repo/.git/modules/sub/HEAD",
    "srv/project.git/HEAD",
    "home/.config/gh/config.yml",
    "src/config",
]


async def test_near_misses_stay_readable(ws: Path, mode: str) -> None:
    for rel in NEAR_MISSES:
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("plain\n")
    async with connect(ws, mode) as c:
        for rel in NEAR_MISSES:
            r = await call(c, "ReadFile", path=rel)
            assert not r.is_error and "plain" in text(r), (rel, text(r))


def _submodule_checkout(ws: Path) -> None:
    """What `actions/checkout` with submodules leaves: the token in each config."""
    for rel in ("repo/.git/config", "repo/.git/modules/sub/config"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(CONTENT)
    (ws / "repo/.git/modules/sub/HEAD").write_text(f"ref: refs/heads/main\n# {TOKEN[:4]}\n")
    (ws / "repo/sub").mkdir()
    (ws / "repo/sub/.git").write_text("gitdir: ../.git/modules/sub\n")
    (ws / "repo/sub/README").write_text("the submodule\n")


async def check_probe(c: Client[Any]) -> None:
    read = await call(c, "ReadFile", path="repo/.git/modules/sub/config")
    assert read.is_error and "appears to contain secrets" in text(read), text(read)
    assert TOKEN not in str(read)
    for path in (
        "repo/.git/modules/sub/config",
        "repo/.git/modules/sub",
        "repo/.git/modules",
        "repo/.git",
        "repo",
    ):
        for output_mode in ("content", "files_with_matches", "count_matches"):
            r = await call(
                c, "Grep", pattern="extraheader|x-access-token|AUTHORIZATION", path=path,
                output_mode=output_mode, include_ignored=True,
            )  # fmt: skip
            shown = str(r)
            assert TOKEN not in shown and "AUTHORIZATION: basic" not in shown, (path, output_mode, shown)
            assert "modules/sub/config" not in text(r).split("Skipped")[0], (path, output_mode, text(r))


@pytest.mark.slow
async def test_submodule_config_over_stdio(ws: Path, mode: str) -> None:
    _submodule_checkout(ws)
    async with Client(stdio_transport(ws), mode=mode) as c:
        await check_probe(c)


@pytest.mark.slow
async def test_submodule_config_over_confined_http(ws: Path, mode: str) -> None:
    _submodule_checkout(ws)
    with http_server(ws) as url:
        async with Client(url, mode=mode) as c:
            await check_probe(c)
