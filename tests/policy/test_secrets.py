from __future__ import annotations

import pytest

from filegate.policy.secrets import SecretMatcher, skipped_secrets_warning

SENSITIVE = [
    ".env", "a/.ENV", ".env.local", "deep/dir/.env.production", "id_rsa", "x/id_ed25519",
    "id_ecdsa", "server.pem", "tls/private.KEY", ".netrc", ".npmrc", ".pgpass", "credentials",
    "/home/u/.aws/credentials", ".gcp/credentials", "my-1-dir/.env.local",
]  # fmt: skip
NOT_SENSITIVE = [
    ".env.example", "a/.env.sample", ".ENV.TEMPLATE", "id_rsa.pub", "keyboard.txt",
    "credentials.json", "notes", "environment.py", "src/env.py", "pem", "monkey",
]  # fmt: skip


@pytest.mark.parametrize("path", SENSITIVE)
def test_default_patterns_catch_secrets_case_insensitively(path: str) -> None:
    assert SecretMatcher().is_sensitive(path)


@pytest.mark.parametrize("path", NOT_SENSITIVE)
def test_default_patterns_leave_ordinary_files_alone(path: str) -> None:
    assert not SecretMatcher().is_sensitive(path)


def test_user_patterns_extend_the_defaults_and_never_replace_them() -> None:
    m = SecretMatcher(["*.p12", "secrets/", "/anchored.txt", "!.env"])
    assert m.is_sensitive("a/b/c.p12")
    assert m.is_sensitive("secrets/x/y.txt")
    assert m.is_sensitive("anchored.txt") and not m.is_sensitive("a/anchored.txt")
    # a user negation cannot un-protect a default pattern
    assert m.is_sensitive(".env")


def test_warning_names_at_most_five_files_and_the_total() -> None:
    names = [f".env.{i}" for i in range(7)]
    w = skipped_secrets_warning(names)
    assert w.startswith("Skipped 7 sensitive file(s) (.env.0, .env.1, .env.2, .env.3, .env.4, ... (7")
    assert w.endswith("These files may contain credentials or private keys.")
