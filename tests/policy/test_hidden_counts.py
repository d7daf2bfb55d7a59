"""What a search says it left out (SPEC §2.6, §8.5; issue 53 items 7 and 11), at the policy's
seam: secrets named in Kimi's sentence, files a client rule hides counted apart and never named,
and rule matching in Unicode NFC."""

from __future__ import annotations

import os
import unicodedata
from pathlib import Path

from filegate.policy.clientrules import ClientRules
from filegate.policy.gitignore import nfc
from filegate.policy.secrets import SecretMatcher, skipped_secrets_warning
from filegate.tools.search.ignores import read_rule_file


def matcher(ws: Path) -> SecretMatcher:
    rules = ClientRules((ws,), ws, None, read_rule_file)
    rules.check()
    return SecretMatcher(client=rules)


def test_hidden_paths_are_told_apart_from_secrets(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path))
    (ws / ".cursorignore").write_text("keys.txt\n.env.hidden\n")
    m = matcher(ws)
    paths = [f"{ws}/.env", f"{ws}/keys.txt", f"{ws}/sub/keys.txt", f"{ws}/.env.hidden", f"{ws}/id_rsa"]
    secrets, hidden, sources = m.hidden_apart(paths)
    # A file both a secret and hidden (.env.hidden) is hidden: its name is not said.
    assert secrets == [f"{ws}/.env", f"{ws}/id_rsa"] and hidden == 3 and sources == [".cursorignore"]
    assert m.hidden_apart([]) == ([], 0, [])


def test_the_sentence_names_secrets_and_counts_hidden_files() -> None:
    assert skipped_secrets_warning([], [".cursorignore"], 1) == (
        "1 file hidden from AI tools by the rules in `.cursorignore`."
    )
    both = skipped_secrets_warning([".env"], [".aiexclude", ".cursorignore"], 2)
    assert both == (
        "Skipped 1 sensitive file(s) (.env) to protect secrets. These files may contain credentials or "
        "private keys. 2 files hidden from AI tools by the rules in `.aiexclude`, `.cursorignore`."
    )
    assert skipped_secrets_warning([".env"]).endswith("private keys.")


def test_rules_and_paths_compare_in_nfc(tmp_path: Path) -> None:
    ws = Path(os.path.realpath(tmp_path))
    nfd = unicodedata.normalize("NFD", "café")
    (ws / ".aiexclude").write_text("café\n", encoding="utf-8")
    m = matcher(ws)
    assert m.is_sensitive(f"{ws}/{nfd}") and m.is_sensitive(f"{ws}/café")
    assert not m.is_sensitive(f"{ws}/cafe")
    assert nfc("ascii") == "ascii" and nfc(nfd) == "café"
