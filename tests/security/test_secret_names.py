"""The sensitive names of SPEC §2.6 through a real client: the new default entries, exceptions
that name a file only (never a directory of that name), and NFC/NFD spellings."""

from __future__ import annotations

import unicodedata
from pathlib import Path

import pytest

from tests.conftest import call, connect, text

CANARY = "SECRET-CANARY-names-5d1c"

# Each is sensitive (SPEC §2.6); the ones under `.env.example/` or `.ENV.SAMPLE/` were served
# before (an exception covered the whole tree).
SENSITIVE = [
    ".env.example/.env",
    ".ENV.SAMPLE/id_rsa",
    ".env.template/notes.txt",
    ".envrc",
    "keys/id_dsa",
    "keys/id_rsa_work",
    "keys/id_ed25519_sk",
    "cert.p12",
    "cert.PFX",
    ".pypirc",
    ".git-credentials",
    "gcp/credentials.json",
    "home/.docker/config.json",
    "home/.kube/config",
    "repo/.git/config",
]
# Near misses that stay readable.
ORDINARY = ["app/.env.example", "docs/.env.sample", "keys/id_rsa.pub", "docker/config.json", "kube/config"]


def _fill(ws: Path) -> None:
    for rel in SENSITIVE + ORDINARY:
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"TOKEN={CANARY}\n")


@pytest.mark.parametrize("rel", SENSITIVE)
async def test_read_file_refuses_every_sensitive_form(ws: Path, mode: str, rel: str) -> None:
    _fill(ws)
    async with connect(ws, mode) as c:
        r = await call(c, "ReadFile", path=rel)
    assert r.is_error
    assert "appears to contain secrets" in text(r)
    assert CANARY not in str(r)


async def test_near_misses_stay_readable(ws: Path, mode: str) -> None:
    _fill(ws)
    async with connect(ws, mode) as c:
        for rel in ORDINARY:
            r = await call(c, "ReadFile", path=rel)
            assert not r.is_error, rel
            assert CANARY in text(r)


async def test_grep_leaves_every_sensitive_form_out_and_counts_it(ws: Path, mode: str) -> None:
    _fill(ws)
    async with connect(ws, mode) as c:
        r = await call(c, "Grep", pattern="TOKEN", output_mode="files_with_matches", include_ignored=True)
    shown = text(r)
    assert not r.is_error, shown
    listed = {line for line in shown.splitlines() if line and not line.startswith("Skipped ")}
    assert listed >= set(ORDINARY)
    assert not listed & set(SENSITIVE)
    searched = [rel for rel in SENSITIVE if "/.git/" not in f"/{rel}"]  # rg never enters .git/
    assert f"Skipped {len(searched)} sensitive file(s)" in shown


async def test_an_nfc_secret_pattern_catches_the_nfd_name(ws: Path, mode: str) -> None:
    nfc = "r\u00e9sum\u00e9.txt"
    nfd = unicodedata.normalize("NFD", nfc)
    (ws / nfd).write_text(f"{CANARY}\n")
    async with connect(ws, mode, secret_patterns=[nfc]) as c:
        r = await call(c, "ReadFile", path=nfd)
    assert r.is_error and "appears to contain secrets" in text(r)
    assert CANARY not in str(r)
