"""SPEC §2.6's whole credential list through real transports (issue 41 item 3): one workspace
holds every entry in two spellings — as its tool writes it under an NFC parent, and with its
own name's case changed under an NFD parent (macOS archives) — and one server per transport
(stdio, confined HTTP) is asked about each: ReadFile and ReadMediaFile refuse it, Grep in
every output mode prints none of their lines nor names them, Glob lists none of them; the near
misses beside them (public keys, known_hosts, example env files) stay readable and found."""

from __future__ import annotations

import asyncio
import re
import unicodedata
from pathlib import Path
from typing import Any

from fastmcp import Client

from filegate.policy.secrets import SecretMatcher
from tests.conftest import call, http_server, stdio_transport, text
from tests.security.test_credential_files import CREDENTIAL_FILES

# The word every file holds (a Grep for it finds the near misses only), and each file's token.
NEEDLE = "CANARYCRED"

# SPEC §2.6, in its order: one path each (the first part is the test's own folder).
SPEC_FILES = [
    "repo/.env",
    "repo/.env.production",
    "repo/.envrc",
    "home/.ssh/id_rsa",
    "home/.ssh2/id_dsa",
    "home/keys/id_ed25519",
    "home/keys/id_ecdsa",
    "home/keys/id_rsa_work",
    "repo/certs/server.pem",
    "repo/certs/server.key",
    "repo/certs/client.p12",
    "repo/certs/client.pfx",
    "home/.netrc",
    "repo/.npmrc",
    "home/.pypirc",
    "home/.pgpass",
    "home/.git-credentials",
    "home/app/credentials",
    "repo/credentials.json",
    "home/.aws/credentials",
    "home/.gcp/credentials",
    "home/.docker/config.json",
    "home/.kube/config",
    "repo/.git/config",
    "repo/.git/modules/sub/config",
    "repo/.git/worktrees/wt/config",
    "repo/.git/config.worktree",
    "srv/project.git/config",
    "repo/.hg/hgrc",
    "home/_netrc",
    "repo/.yarnrc.yml",
    "home/.config/gh/hosts.yml",
    "home/.terraform.d/credentials.tfrc.json",
]
# SPEC's turn-4 additions (issue 41: 18 of 19 canaries read through ReadFile, all 19 by Grep).
TURN_4 = [
    "home/.gitconfig",
    "home/.config/git/config",
    "repo/.yarnrc",
    "home/.dockercfg",
    "home/.vault-token",
    "home/.kube/prod/config",
    "home/.kube/cache/discovery/token",
    "ci/prod.kubeconfig",
    "ci/kubeconfig-staging",
    "home/.ssh/deploy",
    "home/.ssh/github_ci",
    "etc/ssh/ssh_host_ed25519_key",
    "home/putty/server.ppk",
    "repo/.env-prod",
    "repo/config/prod.env",
    "home/.my.cnf",
    "home/.s3cfg",
    "home/.boto",
    "home/.authinfo",
    "home/.authinfo.gpg",
    "home/.config/hub",
    "infra/terraform.tfstate",
    "infra/terraform.tfstate.backup",
    "home/.m2/settings.xml",
    "home/.composer/auth.json",
    "home/.gradle/gradle.properties",
    "home/.databrickscfg",
    "android/release.jks",
    "android/debug.keystore",
    "home/.gnupg/secring.gpg",
    "www/.htpasswd",
    "home/.config/rclone/rclone.conf",
]
SPEC_FILES += TURN_4
# The same kind beyond SPEC's list (tests/security/test_credential_files.py's rows).
EXTRA_FILES = [rel for _tool, rel in CREDENTIAL_FILES if rel not in SPEC_FILES]
SENSITIVE = SPEC_FILES + EXTRA_FILES
# Beside them and readable: what the new rules must not take.
NEAR_MISSES = [
    "home/.ssh/id_ed25519.pub",
    "home/.ssh/deploy.pub",
    "home/.ssh/known_hosts",
    "home/.ssh/config",
    "repo/.env.example",
    "repo/.env-example",
    "repo/config/example.env",
    "repo/config/app.sample.env",
    "repo/src/config",
    "infra/main.tf",
    "android/build.gradle",
]

NFC_PARENT = "caf\u00e9"
NFD_PARENT = unicodedata.normalize("NFD", NFC_PARENT)


def spellings(rel: str) -> list[str]:
    """As written under an NFC parent; upper-cased under an NFD parent."""
    first, _, rest = rel.partition("/")
    return [f"{NFC_PARENT}/{rel}", f"{NFD_PARENT}/{first}/{rest.upper()}"]


def token(i: int) -> str:
    return f"{NEEDLE}-{i:04d}-Vx3"


def populate(ws: Path) -> tuple[dict[str, str], dict[str, str]]:
    """Every file in both spellings; (sensitive path → its token, near miss → its token)."""
    sensitive: dict[str, str] = {}
    near: dict[str, str] = {}
    for table, rels in ((sensitive, SENSITIVE), (near, NEAR_MISSES)):
        for rel in rels:
            for spelled in spellings(rel):
                table[spelled] = token(
                    len(sensitive) + len(near) + (len(SENSITIVE) * 2 if table is near else 0)
                )
                (ws / spelled).parent.mkdir(parents=True, exist_ok=True)
                (ws / spelled).write_text(f"password = {table[spelled]}\n")
    return sensitive, near


def names(path: str, shown: str) -> bool:
    """``shown`` names ``path`` itself (not a longer name it begins: `.env` in `.env.example`)."""
    return re.search(re.escape(path) + r"(?![\w.-])", shown) is not None


async def probe(c: Client[Any], sensitive: dict[str, str], near: dict[str, str]) -> None:
    asked = [(tool, path) for path in sensitive for tool in ("ReadFile", "ReadMediaFile")]
    results = await asyncio.gather(*(call(c, tool, path=path) for tool, path in asked))
    for (tool, path), r in zip(asked, results, strict=True):
        assert r.is_error and "appears to contain secrets" in text(r), (tool, path, text(r))
        assert sensitive[path] not in str(r)
    results = await asyncio.gather(*(call(c, "ReadFile", path=path) for path in near))
    for (path, public), r in zip(near.items(), results, strict=True):
        assert not r.is_error and public in text(r), (path, text(r))
    skipped = re.compile(r"Skipped \d+ sensitive file\(s\)")  # counted by name
    for scope in (".", NFC_PARENT, NFD_PARENT):
        for output_mode in ("content", "files_with_matches", "count_matches"):
            r = await call(
                c, "Grep", pattern=NEEDLE, path=scope, output_mode=output_mode,
                include_ignored=True, head_limit=0,
            )  # fmt: skip
            shown = str(r)
            assert not [s for s in sensitive.values() if s in shown], (scope, output_mode)
            listed = text(r).split("Skipped")[0]
            assert not [p for p in sensitive if names(p, listed)], (scope, output_mode)
            if scope == ".":  # not vacuous: the near misses are found, the rest counted
                found = [p for p in near if p in listed or near[p] in listed]
                assert len(found) == len(near), (output_mode, sorted(set(near) - set(found)))
                assert skipped.search(text(r)), (output_mode, text(r)[-400:])
    r = await call(c, "Glob", pattern="**/*", include_dirs=False)
    listing = text(r)
    assert not [p for p in sensitive if names(p, listing)]
    assert all(p in listing for p in near), listing


def test_every_entry_is_sensitive_in_both_spellings_and_no_near_miss_is() -> None:
    matcher = SecretMatcher()
    for rel in SENSITIVE:
        for spelled in spellings(rel):
            assert matcher.is_sensitive(spelled), spelled
    for rel in NEAR_MISSES:
        for spelled in spellings(rel):
            assert not matcher.is_sensitive(spelled), spelled


async def test_every_credential_file_over_stdio(ws: Path) -> None:
    sensitive, near = populate(ws)
    async with Client(stdio_transport(ws), mode="legacy") as c:
        await probe(c, sensitive, near)


async def test_every_credential_file_over_confined_http(ws: Path) -> None:
    sensitive, near = populate(ws)
    with http_server(ws) as url:
        async with Client(url) as c:
            await probe(c, sensitive, near)
