"""The gitignore-style syntax of secret patterns (SPEC §2.6), one construct at a time: `*`,
`?`, `**`, character classes (negated, unclosed), anchoring, directory-only rules, and the
factoring of `*.ext` rules that must not change what they match."""

from __future__ import annotations

import pytest

from filegate.policy.secrets import SecretMatcher, skipped_secrets_warning


def user(*patterns: str) -> SecretMatcher:
    return SecretMatcher(list(patterns))


@pytest.mark.parametrize(
    ("pattern", "caught", "left"),
    [
        ("tok?n.txt", ["token.txt", "a/TOKEN.txt"], ["tokn.txt", "toke/n.txt", "tokeen.txt"]),
        ("*.secret", ["a.secret", "x/.secret"], ["a.secret.txt", "a/secret"]),
        ("db*.cfg", ["db.cfg", "db-prod.cfg"], ["d/b.cfg", "xdb.cfg"]),
        ("**/deep.txt", ["deep.txt", "a/b/deep.txt"], ["adeep.txt"]),
        ("vault/**", ["vault/x", "vault/a/b"], ["vaultx/a", "a/vault"]),
        ("a/**/z.txt", ["a/z.txt", "a/b/c/z.txt", "x/a/b/z.txt"], ["ab/z.txt", "a/z.txt.bak"]),
        ("k[0-9].pem2", ["k1.pem2", "K7.PEM2"], ["kx.pem2", "k10.pem2"]),
        ("k[!0-9].pem2", ["kx.pem2"], ["k1.pem2"]),
        ("k[ab]", ["ka", "kb"], ["kc", "k[ab]"]),
        ("k[.txt", ["k[.txt"], ["ka.txt", "k.txt"]),
        ("k[]", ["k[]"], ["k"]),
        ("b[\\]c", ["b\\c"], ["b]c", "bXc"]),
        ("[ab]x[cd]", ["axc", "bxd"], ["axa", "cxc", "[ab]x[cd]"]),
        ("/top.txt", ["top.txt", "/top.txt"], ["a/top.txt"]),
        ("build/", ["build/x.txt", "a/build/y"], ["build", "a/build"]),
        ("/", [], ["a", "a/b"]),
        ("a.b", ["a.b"], ["axb"]),
    ],
)
def test_each_glob_construct(pattern: str, caught: list[str], left: list[str]) -> None:
    m = user(pattern)
    for path in caught:
        assert m.is_sensitive(path), (pattern, path)
    for path in left:
        assert not m.is_sensitive(path), (pattern, path)


def test_one_star_rule_is_not_factored_and_still_matches() -> None:
    assert user("*.one").is_sensitive("a/x.one")
    assert not user("*.one").is_sensitive("a/x.two")


def test_several_star_rules_factored_together_each_still_match_alone() -> None:
    m = user("*.aa", "*.bb", "*.cc", "plain.txt")
    for name in ("x.aa", "y/x.bb", "z.cc", "plain.txt", "d/plain.txt"):
        assert m.is_sensitive(name), name
    for name in ("x.dd", "x.aab", "aa", "plain.txt2"):
        assert not m.is_sensitive(name), name


def test_anchored_and_unanchored_rules_of_one_list_keep_their_own_anchoring() -> None:
    m = user("/root-only.txt", "anywhere.txt", "dir-only/")
    assert m.is_sensitive("root-only.txt") and not m.is_sensitive("x/root-only.txt")
    assert m.is_sensitive("x/y/anywhere.txt")
    assert m.is_sensitive("x/dir-only/f") and not m.is_sensitive("x/dir-only")


def test_a_rule_matches_a_whole_name_not_a_part() -> None:
    m = user("key.txt")
    assert m.is_sensitive("key.txt") and m.is_sensitive("key.txt/inner")
    assert not m.is_sensitive("mykey.txt") and not m.is_sensitive("key.txts")


def test_padding_around_a_pattern_is_ignored() -> None:
    m = user("  spaced.txt  ", "\t!spaced.txt.ok ")
    assert m.is_sensitive("a/spaced.txt")
    assert not m.is_sensitive("spaced.txt.ok")


def test_an_exception_lifts_only_a_name_a_rule_matched() -> None:
    m = user("*.cfg", "!public.cfg")
    assert not m.is_sensitive("public.cfg") and not m.is_sensitive("a/public.cfg")
    assert m.is_sensitive("private.cfg")
    assert m.is_sensitive("x.cfg/public.cfg")
    assert not m.is_sensitive("public.txt")


def test_exceptions_alone_protect_nothing_and_no_rules_match_nothing() -> None:
    assert not user("!x.txt").is_sensitive("x.txt")
    assert not user().is_sensitive("notes.txt")
    assert user().is_sensitive(".env")


def test_an_exception_with_a_directory_rule_and_a_file_rule_of_one_name() -> None:
    m = user("ship/", "*.lock", "!ship.lock")
    assert not m.is_sensitive("a/ship.lock")
    assert m.is_sensitive("ship/ship.lock")  # under a directory a rule names


def test_the_pattern_list_keeps_defaults_first_then_the_users_in_order() -> None:
    m = user("b.txt", "a.txt")
    assert m.patterns[-2:] == ("b.txt", "a.txt")
    assert ".env" in m.patterns


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        ([".env"], "Skipped 1 sensitive file(s) (.env) to protect secrets."),
        (["e", "d", "c", "b", "a"], "Skipped 5 sensitive file(s) (a, b, c, d, e) to protect secrets."),
        (
            ["f", "e", "d", "c", "b", "a"],
            "Skipped 6 sensitive file(s) (a, b, c, d, e, ... (6 files total)) to protect secrets.",
        ),
    ],
)
def test_warning_at_the_five_name_edge(names: list[str], expected: str) -> None:
    assert (
        skipped_secrets_warning(names) == expected + " These files may contain credentials or private keys."
    )
