"""policy/clientrules.py on real files (SPEC §8.5): each source, Claude Code's path forms as its
documentation gives them (//abs, ~/, / from the project, ./ and bare from the working
directory, **), precedence, reloading on a stat change, and unusable files failing closed.
The tools' side (every tool, both eras) is tests/security/test_client_rules.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from filegate.errors import PathError
from filegate.policy.clientrules import MAX_RULE_BYTES, ClientRules, RuleFileError, literal_start
from filegate.policy.rulelisting import PRECEDENCE, describe, ignore_files_under
from filegate.policy.secrets import SecretMatcher
from filegate.policy.workspace import Workspace
from filegate.settings import Settings
from filegate.tools.search.ignores import client_rules_of, read_rule_file


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = Path(os.path.realpath(tmp_path)) / "home"
    (h / ".claude").mkdir(parents=True)
    return h


def rules_in(ws: Path, home: Path, *, extra: tuple[Path, ...] = ()) -> ClientRules:
    r = ClientRules((ws, *extra), ws, home, read_rule_file)
    r.check()
    return r


def settings(path: Path, deny: list[str] = (), ask: list[str] = ()) -> None:  # type: ignore[assignment]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": {"deny": list(deny), "ask": list(ask), "allow": ["Read"]}}))


# --- ignore files -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", [".cursorignore", ".geminiignore", ".aiexclude", ".aiignore", ".codeiumignore"]
)
def test_each_ignore_file_hides_in_its_own_subtree_only(ws: Path, home: Path, name: str) -> None:
    (ws / "a").mkdir()
    (ws / "a" / name).write_text("# a comment\n*.yml\n!keep.yml\n")
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/a/prod.yml") == f"a/{name}"
    assert r.read_source(f"{ws}/a/deep/er/prod.yml") == f"a/{name}"
    assert r.read_source(f"{ws}/a/keep.yml") is None  # the file's own last matching line wins
    assert r.read_source(f"{ws}/b/prod.yml") is None  # a sibling's tree is not its own
    assert r.read_source(f"{ws}/prod.yml") is None
    assert r.read_source(f"{ws}/a/prod.txt") is None


def test_gitignore_forms_anchored_directory_and_double_star(ws: Path, home: Path) -> None:
    (ws / ".cursorignore").write_text("/top.txt\nbuild/\nlogs/**/*.log\nsecret?\n")
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/top.txt") == ".cursorignore"
    assert r.read_source(f"{ws}/x/top.txt") is None  # anchored to the file's folder
    assert r.read_source(f"{ws}/x/build/out.o") == ".cursorignore"  # a folder and all under it
    assert r.read_source(f"{ws}/build") is None  # `build/` names folders: a file so named is not one
    assert r.read_source(f"{ws}/logs/a/b/x.log") == ".cursorignore"
    assert r.read_source(f"{ws}/logs/x.txt") is None
    assert r.read_source(f"{ws}/secret1") == ".cursorignore"
    assert r.read_source(f"{ws}/secret12") is None


def test_nothing_under_a_hidden_folder_comes_back(ws: Path, home: Path) -> None:
    (ws / ".aiignore").write_text("private/\n")
    (ws / "private").mkdir()
    (ws / "private" / ".aiignore").write_text("!open.txt\n")
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/private/open.txt") == ".aiignore"


def test_a_deeper_file_cannot_re_include_what_a_higher_one_hides(ws: Path, home: Path) -> None:
    """Unlike git (where a nested `.gitignore`'s `!keep.yml` takes back a parent's `*.yml`),
    a client rule hides a path whichever rule file on the way hides it: fail closed (README,
    "One policy for every agent"). Within one file, `!` works git's way."""
    (ws / "sub").mkdir()
    (ws / ".cursorignore").write_text("*.yml\n")
    (ws / ".geminiignore").write_text("*.cfg\n!open.cfg\n")
    (ws / "sub" / ".cursorignore").write_text("!keep.yml\n!*.cfg\n")
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/sub/keep.yml") == ".cursorignore"
    assert r.read_source(f"{ws}/sub/a.cfg") == ".geminiignore"
    assert r.read_source(f"{ws}/open.cfg") is None  # the same file's `!` re-includes
    assert r.read_source(f"{ws}/sub/open.cfg") is None


def test_a_deeper_file_adds_to_what_a_higher_one_hides(ws: Path, home: Path) -> None:
    (ws / "a" / "b").mkdir(parents=True)
    (ws / ".cursorignore").write_text("*.key1\n")
    (ws / "a" / "b" / ".geminiignore").write_text("*.key2\n")
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/a/b/c/x.key1") == ".cursorignore"
    assert r.read_source(f"{ws}/a/b/c/x.key2") == "a/b/.geminiignore"
    assert r.read_source(f"{ws}/a/x.key2") is None


def test_ignore_files_bind_only_inside_the_workspace(ws: Path, home: Path, tmp_path: Path) -> None:
    (ws / ".cursorignore").write_text("*\n")
    other = Path(os.path.realpath(tmp_path)) / "other"
    other.mkdir()
    (other / ".cursorignore").write_text("*\n")
    r = rules_in(ws, home)
    assert r.read_source(f"{other}/x") is None
    assert r.read_source(f"{ws}x/y") is None  # component-wise: /ws-x is not in /ws
    assert r.read_source(f"{ws}/y") == ".cursorignore"


def test_an_add_dir_has_its_own_ignore_files(ws: Path, home: Path, tmp_path: Path) -> None:
    extra = Path(os.path.realpath(tmp_path)) / "extra"
    extra.mkdir()
    (extra / ".codeiumignore").write_text("x\n")
    r = rules_in(ws, home, extra=(extra,))
    assert r.read_source(f"{extra}/x") == escape_abs(extra / ".codeiumignore")


def escape_abs(p: Path) -> str:
    return str(p)


# --- Claude Code settings ---------------------------------------------------------------------


def test_claude_code_path_forms(ws: Path, home: Path, tmp_path: Path) -> None:
    settings(
        ws / ".claude" / "settings.json",
        deny=[
            "Read(./dot/x.txt)",  # the working directory
            "Read(bare.txt)",  # no '/': any depth (gitignore)
            "Read(rel/y.txt)",  # with '/': from the working directory
            "Read(/proj/**)",  # from the project the settings file belongs to
            "Read(~/h/*.pdf)",  # from the home
            f"Read(/{tmp_path}/abs/z.txt)",  # //abs: from the file system's root
            "Read(src/**/*.ts)",
        ],
    )
    r = rules_in(ws, home)
    src = ".claude/settings.json"
    assert r.read_source(f"{ws}/dot/x.txt") == src
    assert r.read_source(f"{ws}/sub/dot/x.txt") is None
    assert r.read_source(f"{ws}/bare.txt") == src and r.read_source(f"{ws}/q/bare.txt") == src
    assert r.read_source(f"{ws}/rel/y.txt") == src and r.read_source(f"{ws}/q/rel/y.txt") is None
    assert r.read_source(f"{ws}/proj/a/b") == src
    assert r.read_source(f"{home}/h/doc.pdf") == src and r.read_source(f"{home}/doc.pdf") is None
    assert r.read_source(f"{tmp_path}/abs/z.txt") == src
    assert r.read_source(f"{ws}/src/a/b/c.ts") == src and r.read_source(f"{ws}/src/c.js") is None


def test_a_tool_only_rule_switches_the_clients_tool_off_and_binds_no_path(ws: Path, home: Path) -> None:
    """SPEC §8.5/§9: `Edit`, `Read`, `Write()` with no path switch Claude Code's own tools off
    (install --route-builtins writes them); they hide nothing from filegate and refuse no write.
    Other tools' rules are not about paths either."""
    deny = ["Bash(cat *)", "WebFetch", "mcp__x__y", "Edit", "Read", "Write()", "Read(./kept/**)"]
    settings(ws / ".claude" / "settings.local.json", deny=deny, ask=["Edit()"])
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/anything") is None
    assert r.write_rule(f"{ws}/anything") is None
    assert r.write_rule(f"{home}/elsewhere") is None
    assert [rule.text for rule in r.claude_rules()] == ["Read(./kept/**)"]  # a path rule still binds
    assert r.read_source(f"{ws}/kept/x") == ".claude/settings.local.json"


def test_deny_wins_over_ask_and_edit_and_write_both_bind_writes(ws: Path, home: Path) -> None:
    settings(ws / ".claude" / "settings.json", deny=["Write(./w/**)"], ask=["Edit(./w/**)", "Edit(./e.txt)"])
    settings(home / ".claude" / "settings.json", ask=["Write(~/notes.md)"])
    r = rules_in(ws, home)
    assert r.write_rule(f"{ws}/w/x") == ("deny", ".claude/settings.json")
    assert r.write_rule(f"{ws}/e.txt") == ("ask", ".claude/settings.json")
    assert r.write_rule(f"{home}/notes.md") == ("ask", "~/.claude/settings.json")
    assert r.write_rule(f"{ws}/other.txt") is None
    assert r.read_source(f"{ws}/w/x") is None  # a write rule hides nothing from reading


def test_rule_files_themselves_are_asked(ws: Path, home: Path) -> None:
    r = rules_in(ws, home)
    for rel in (".cursorignore", "a/b/.aiexclude", ".claude/settings.json", ".claude/settings.local.json"):
        assert r.write_rule(f"{ws}/{rel}") == ("ask", rel), rel
    assert r.write_rule(f"{home}/.claude/settings.json") == ("ask", "~/.claude/settings.json")
    assert r.write_rule(f"{ws}/.claude/other.json") is None
    assert r.write_rule(f"{ws}/settings.json") is None
    assert r.write_rule(f"{home}/.cursorignore") is None  # outside the workspace: not one it honours
    assert r.rule_file(f"{ws}/x/.codeiumignore") == "x/.codeiumignore"


def test_the_users_settings_may_be_a_dotfile_managers_symlink(ws: Path, home: Path, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles.json"
    settings(dotfiles, deny=["Read(./x)"])
    os.symlink(dotfiles, home / ".claude" / "settings.json")
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/x") == "~/.claude/settings.json"


# --- reload and fail closed -------------------------------------------------------------------


def test_a_changed_file_is_read_again_on_the_next_check(ws: Path, home: Path) -> None:
    (ws / ".cursorignore").write_text("a\n")
    settings(ws / ".claude" / "settings.json", deny=["Read(./c)"])
    r = rules_in(ws, home)
    before = r.fingerprint()
    assert r.read_source(f"{ws}/a") and not r.read_source(f"{ws}/b")
    (ws / ".cursorignore").write_text("b\n")  # same size
    settings(ws / ".claude" / "settings.json", deny=["Read(./d)"])
    assert r.fingerprint() != before
    r.check()
    assert not r.read_source(f"{ws}/a") and r.read_source(f"{ws}/b")
    assert not r.read_source(f"{ws}/c") and r.read_source(f"{ws}/d")
    same = r.fingerprint()
    r.check()
    assert r.fingerprint() == same
    os.unlink(ws / ".cursorignore")
    assert r.fingerprint() != same
    r.check()
    assert not r.read_source(f"{ws}/b")


@pytest.mark.parametrize(
    ("rel", "content", "why"),
    [
        (".claude/settings.json", "[1, 2]", "is not a JSON object"),
        (".claude/settings.json", '{"permissions": []}', "has a `permissions` that is not an object"),
        (
            ".claude/settings.json",
            '{"permissions": {"ask": [1]}}',
            "has a `permissions.ask` that is not a list",
        ),
        (".claude/settings.json", '{"permissions": {"deny": ["Read(x"]}}', "no closing parenthesis"),
        (".claude/settings.json", b'{"a": "\xff"}', "not UTF-8"),
        (".claude/settings.local.json", "{", "is not valid JSON (Expecting property name"),
    ],
)
def test_a_malformed_settings_file_fails_every_check(
    ws: Path, home: Path, rel: str, content: str | bytes, why: str
) -> None:
    (ws / ".claude").mkdir()
    p = ws / rel
    p.write_bytes(content if isinstance(content, bytes) else content.encode())
    r = ClientRules((ws,), ws, home, read_rule_file)
    for _ in range(2):
        with pytest.raises(PathError) as raised:
            r.check()
        assert f"`{rel}` " in raised.value.message and why in raised.value.message
        assert raised.value.brief == "Client rule file unusable"
    p.write_text("{}")
    r.check()


def test_a_broken_nested_ignore_file_hides_its_subtree_then_fails_the_next_call(ws: Path, home: Path) -> None:
    (ws / "a").mkdir()
    os.mkfifo(ws / "a" / ".cursorignore")
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/a/x") == "a/.cursorignore"
    assert r.read_source(f"{ws}/b") is None
    with pytest.raises(PathError, match=r"`a/.cursorignore` is not a regular file"):
        r.check()
    os.unlink(ws / "a" / ".cursorignore")
    r.check()
    assert r.read_source(f"{ws}/a/x") is None


def test_read_rule_file_limits(tmp_path: Path) -> None:
    assert read_rule_file(str(tmp_path / "absent")) is None
    big = tmp_path / "big"
    big.write_bytes(b"x" * (MAX_RULE_BYTES + 1))
    with pytest.raises(RuleFileError, match="larger than 1024 KiB"):
        read_rule_file(str(big))
    ok = tmp_path / "ok"
    ok.write_bytes(b"x" * MAX_RULE_BYTES)
    assert read_rule_file(str(ok)) is not None
    os.symlink(ok, tmp_path / "link")
    with pytest.raises(RuleFileError, match="symlink"):
        read_rule_file(str(tmp_path / "link"))
    assert read_rule_file(str(tmp_path / "link"), True) is not None
    (tmp_path / "dir").mkdir()
    with pytest.raises(RuleFileError, match="not a regular file"):
        read_rule_file(str(tmp_path / "dir"))


def test_client_rules_off_and_on(ws: Path) -> None:
    assert client_rules_of(Settings(workdir=ws, client_rules=False)) is None
    on = client_rules_of(Settings(workdir=ws))
    assert on is not None and on.dirs == (str(ws),)


# --- `filegate rules` ------------------------------------------------------------------------


def test_the_listing_names_sources_precedence_and_problems(ws: Path, home: Path) -> None:
    (ws / "a").mkdir()
    (ws / "a" / ".cursorignore").write_text("# c\nprod.yml\n")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / ".aiignore").write_text("x\n")  # not walked into
    settings(ws / ".claude" / "settings.json", deny=["Read(./s)"], ask=["Edit(./e)"])
    (ws / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {"allow": ["Edit(**)"]}}))
    (home / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Edit(src/**)"]}}))
    os.symlink("/nowhere", ws / ".aiexclude")
    said, unusable = describe(ClientRules((ws,), ws, home, read_rule_file))
    assert unusable == 1
    assert "Precedence" in said
    assert "a/.cursorignore (Cursor; hides from reading under a/)\n  prod.yml" in said
    assert ".claude/settings.json (Claude Code settings" in said
    assert "  deny   Read(./s)" in said and "  ask    Edit(./e)" in said
    # SPEC §11: the user's own allow rule is listed; a workspace's is no rule here at all
    assert "~/.claude/settings.json (Claude Code settings" in said and "  allow  Edit(src/**)" in said
    assert "Edit(**)" not in said
    (home / ".claude" / "settings.json").unlink()
    assert "Unusable rule files" in said and ".aiexclude is a symlink" in said
    assert "node_modules" not in said
    assert ignore_files_under(str(ws), max_dirs=1)[1] is False
    empty = Path(str(ws) + "-empty")
    empty.mkdir()
    assert describe(ClientRules((empty,), empty, home, read_rule_file)) == (
        f"{PRECEDENCE}\n\nNo client rule file found.",
        0,
    )


def test_filegate_rules_command(
    ws: Path, home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from filegate.cli import main

    monkeypatch.setenv("HOME", str(home))
    (ws / ".geminiignore").write_text("*.csv\n")
    assert main(["rules", "--workdir", str(ws)]) == 0
    assert ".geminiignore (Gemini CLI; hides from reading under ./)\n  *.csv" in capsys.readouterr().out
    assert main(["rules", "--workdir", str(ws), "--client-rules", "off"]) == 0
    assert "Client rules are off" in capsys.readouterr().out


@pytest.mark.parametrize("broken", ["workspace", "home"])
def test_filegate_rules_exits_non_zero_on_a_broken_rule_file(
    ws: Path, home: Path, broken: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rule file that stops every tool call is not a listing that went well: exit 1."""
    from filegate.cli import main

    monkeypatch.setenv("HOME", str(home))
    where = ws if broken == "workspace" else home
    (where / ".claude").mkdir(exist_ok=True)
    (where / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Read(./x)",]}}')
    assert main(["rules", "--workdir", str(ws)]) == 1
    out = capsys.readouterr().out
    assert "Unusable rule files (every tool call fails until they are fixed):" in out
    assert "settings.json is not valid JSON" in out


# --- the bookkeeping a mutation run found untested ----------------------------------------------


def test_two_unusable_files_are_both_named_and_a_rewrite_fixes_one(ws: Path, home: Path) -> None:
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text("{")
    os.symlink("x", ws / ".aiignore")
    r = ClientRules((ws,), ws, home, read_rule_file)
    with pytest.raises(PathError) as raised:
        r.check()
    message = raised.value.message
    assert "`.aiignore` is a symlink" in message and "`.claude/settings.json` is not valid JSON" in message
    assert message.index("`.aiignore`") < message.index("`.claude/settings.json`")  # sorted, one sentence
    os.unlink(ws / ".aiignore")
    (ws / ".aiignore").write_text("hidden\n")  # a regular file now: used, no longer named
    with pytest.raises(PathError) as raised:
        r.check()
    assert "`.aiignore`" not in raised.value.message
    (ws / ".claude" / "settings.json").write_text("{}")
    r.check()
    assert r.read_source(f"{ws}/hidden") == ".aiignore"


def test_the_local_settings_are_named_before_the_shared_and_the_users(ws: Path, home: Path) -> None:
    for path in (
        ws / ".claude" / "settings.json",
        ws / ".claude" / "settings.local.json",
        home / ".claude" / "settings.json",
    ):
        settings(path, deny=["Read(./x)", "Edit(./x)"])
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/x") == ".claude/settings.local.json"
    assert r.write_rule(f"{ws}/x") == ("deny", ".claude/settings.local.json")
    (ws / ".claude" / "settings.local.json").unlink()
    r.check()
    assert r.read_source(f"{ws}/x") == ".claude/settings.json"
    assert [shown for _, shown, _ in r.settings_files()] == [
        ".claude/settings.local.json",
        ".claude/settings.json",
        "~/.claude/settings.json",
    ]


def test_a_hidden_folder_hides_every_file_below_it_and_no_sibling(ws: Path, home: Path) -> None:
    (ws / ".cursorignore").write_text("a/b/\n")
    r = rules_in(ws, home)
    for rel in ("a/b/x", "a/b/c/d/e/y", "a/b/c/z"):
        assert r.read_source(f"{ws}/{rel}") == ".cursorignore", rel
    for rel in ("a/bx/y", "a/c/b", "b/x", "a/x"):
        assert r.read_source(f"{ws}/{rel}") is None, rel
    assert r.read_source(f"{ws}/a/b") is None  # `b/` names a folder; a file so named is not one


def test_a_claude_rule_on_a_folder_covers_what_is_below_it(ws: Path, home: Path) -> None:
    settings(ws / ".claude" / "settings.json", deny=["Read(./conf)", "Read(~/keys)"])
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/conf/prod/x.yml") == ".claude/settings.json"
    assert r.read_source(f"{ws}/conf") == ".claude/settings.json"
    assert r.read_source(f"{ws}/confx") is None
    assert r.read_source(f"{home}/keys/a") == ".claude/settings.json"
    assert r.read_source(f"{home}x/keys/a") is None


def test_without_a_home_a_home_rule_matches_nothing(ws: Path) -> None:
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(~/x)"]}}))
    r = ClientRules((ws,), ws, None, read_rule_file)
    r.check()
    assert r.read_source(f"{ws}/x") is None and r.read_source("/x") is None
    assert r.shown(f"{ws}/a") == "a" and r.shown("/etc/x") == "/etc/x" and r.shown(str(ws)) == "."


def test_the_home_is_taken_by_its_real_path(ws: Path, home: Path, tmp_path: Path) -> None:
    link = tmp_path / "home-link"
    os.symlink(home, link)
    settings(home / ".claude" / "settings.json", deny=["Read(~/k)"])
    r = ClientRules((ws,), ws, link, read_rule_file)
    r.check()
    assert r.read_source(f"{home}/k") == "~/.claude/settings.json"
    assert r.rule_file(f"{home}/.claude/settings.json") == "~/.claude/settings.json"


def test_the_fingerprint_follows_every_known_rule_file(ws: Path, home: Path) -> None:
    (ws / "a").mkdir()
    (ws / "a" / ".geminiignore").write_text("x\n")
    settings(home / ".claude" / "settings.json", deny=["Read(./y)"])
    r = rules_in(ws, home)
    first = r.fingerprint()
    assert r.fingerprint() == first
    assert r.read_source(f"{ws}/a/x") == "a/.geminiignore"  # now known
    known = r.fingerprint()
    assert known != first
    (ws / "a" / ".geminiignore").write_text("z\n")
    assert r.fingerprint() != known
    edited = r.fingerprint()
    settings(home / ".claude" / "settings.json", deny=["Read(./w)"])
    assert r.fingerprint() != edited
    changed = r.fingerprint()
    (ws / "a" / ".geminiignore").write_text("x\n")  # back to its first text (a new stat)
    os.utime(ws / "a" / ".geminiignore", ns=(1, 1))
    (ws / "a" / ".geminiignore").unlink()
    gone = r.fingerprint()
    assert gone not in (changed, known, first)


def test_the_fail_closed_message_in_full(ws: Path, home: Path) -> None:
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text("[]")
    (ws / ".claude" / "settings.local.json").write_text('{"permissions": 1}')
    (home / ".claude" / "settings.json").write_bytes(b'{"a": "\xff"}')
    with pytest.raises(PathError) as raised:
        ClientRules((ws,), ws, home, read_rule_file).check()
    assert raised.value.message == (
        "A client rule file cannot be used: `.claude/settings.json` is not a JSON object; "
        "`.claude/settings.local.json` has a `permissions` that is not an object; "
        "`~/.claude/settings.json` is not valid JSON (not UTF-8 text). filegate refuses every call "
        "until it is fixed (a rule it cannot read might hide anything), or until the server runs "
        "with `--client-rules off`. `filegate rules` lists the rule files."
    )


def test_a_symlinked_settings_file_in_the_workspace_fails_closed(
    ws: Path, home: Path, tmp_path: Path
) -> None:
    elsewhere = tmp_path / "s.json"
    settings(elsewhere, deny=["Read(./x)"])
    (ws / ".claude").mkdir()
    os.symlink(elsewhere, ws / ".claude" / "settings.json")
    with pytest.raises(PathError, match="`.claude/settings.json` is a symlink"):
        ClientRules((ws,), ws, home, read_rule_file).check()


def test_directory_only_and_name_rules_of_claude_code(ws: Path, home: Path) -> None:
    settings(
        ws / ".claude" / "settings.json", deny=["Read(./build/)", "Read(conf)", "Read()"], ask=["Edit(/out/)"]
    )
    r = rules_in(ws, home)
    claude = next(rule for rule in r.claude_rules() if rule.text == "Read(./build/)")
    assert claude.base == str(ws)
    # Read() names no path (a tool-only rule, SPEC §8.5): the two other rules are judged alone.
    only = ClientRules((ws,), ws, home, read_rule_file)
    settings(ws / ".claude" / "settings.json", deny=["Read(./build/)", "Read(conf)"], ask=["Edit(/out/)"])
    only.check()
    assert only.read_source(f"{ws}/build/x") == ".claude/settings.json"
    assert only.read_source(f"{ws}/build") is None  # `build/` names a folder, not this file
    assert only.read_source(f"{ws}/a/conf/x.yml") == ".claude/settings.json"  # a name at any depth
    assert only.read_source(f"{ws}/a/conf") == ".claude/settings.json"
    assert only.read_source(f"{ws}/a/confx/y") is None
    assert only.write_rule(f"{ws}/out/f") == ("ask", ".claude/settings.json")
    assert only.write_rule(f"{ws}/out") is None
    assert r.read_source(f"{ws}/anything/at/all") is None


def test_an_add_dirs_settings_are_relative_to_it(ws: Path, home: Path, tmp_path: Path) -> None:
    extra = Path(os.path.realpath(tmp_path)) / "extra"
    settings(extra / ".claude" / "settings.json", deny=["Read(/p/**)"])
    r = rules_in(ws, home, extra=(extra,))
    assert r.read_source(f"{extra}/p/x") == f"{extra}/.claude/settings.json"
    assert r.read_source(f"{ws}/p/x") is None


def test_a_new_ignore_file_in_a_remembered_folder_is_seen(
    ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from filegate.policy import clientrules

    monkeypatch.setattr(clientrules, "RACY_NS", -(10**12))  # remember every folder at once
    (ws / "a").mkdir()
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/a/x") is None
    r.check()
    assert r.read_source(f"{ws}/a/x") is None  # the folder's names now come from the cache
    (ws / "a" / ".aiexclude").write_text("x\n")  # the folder's mtime and ctime change
    r.check()
    assert r.read_source(f"{ws}/a/x") == "a/.aiexclude"


def test_an_ignore_file_that_is_not_utf8_is_used(ws: Path, home: Path) -> None:
    (ws / ".cursorignore").write_bytes(b"caf\xe9\n*.pem2\n")
    r = rules_in(ws, home)
    assert r.read_source(f"{ws}/k.pem2") == ".cursorignore"


def test_an_unchanged_rule_file_is_not_read_again(ws: Path, home: Path) -> None:
    """The stat key at work: a call pays a stat per rule file, a read only after a change."""
    reads: list[str] = []

    def counting(path: str, follow: bool) -> tuple[tuple[int, int, int, int, int], bytes] | None:
        found = read_rule_file(path, follow)
        if found is not None:
            reads.append(path.removeprefix(str(ws) + "/").removeprefix(str(home) + "/"))
        return found

    (ws / ".aiignore").write_text("x\n")
    settings(ws / ".claude" / "settings.json", deny=["Read(./y)"])
    settings(home / ".claude" / "settings.json", deny=["Read(./z)"])
    r = ClientRules((ws,), ws, home, counting)
    for _ in range(3):
        r.check()
        assert (
            r.read_source(f"{ws}/x") == ".aiignore" and r.read_source(f"{ws}/y") and r.read_source(f"{ws}/z")
        )
    assert sorted(reads) == [".aiignore", ".claude/settings.json", ".claude/settings.json"]
    (ws / ".aiignore").write_text("w\n")
    settings(ws / ".claude" / "settings.json", deny=["Read(./v)"])
    r.check()
    assert r.read_source(f"{ws}/w") == ".aiignore" and r.read_source(f"{ws}/v") == ".claude/settings.json"
    assert len(reads) == 5


def test_an_edit_behind_the_users_symlinked_settings_changes_the_fingerprint(
    ws: Path, home: Path, tmp_path: Path
) -> None:
    target = tmp_path / "dotfiles.json"
    settings(target, deny=["Read(./a)"])
    os.symlink(target, home / ".claude" / "settings.json")
    r = rules_in(ws, home)
    before = r.fingerprint()
    settings(target, deny=["Read(./a)", "Read(./bb)"])
    assert r.fingerprint() != before
    r.check()
    assert r.read_source(f"{ws}/bb") == "~/.claude/settings.json"


# --- the per-folder short cut (issue 38: no per-call cost that shows) ---------------------------


def test_a_folder_no_rule_can_reach_needs_no_check_of_its_files(ws: Path, home: Path) -> None:
    """`may_hide_in` is False only where no ignore file is in force and no `Read` deny rule's
    literal start can lead: there a search clears files by name. Wherever a rule hides a file,
    its folder says it may (the short cut never lets a hidden file through)."""
    for d in ("plain/deep", "ign/sub", "cl/a", "clx", "other", "w/z"):
        (ws / d).mkdir(parents=True)
    (ws / "ign" / ".cursorignore").write_text("*.x\n")
    settings(
        ws / ".claude" / "settings.json",
        deny=["Read(./cl/a/f.txt)", "Read(/other/exact)", "Edit(./plain/**)", "Read(./w/*/q)"],
        ask=["Read(./plain/deep/**)"],
    )
    r = rules_in(ws, home)
    assert not r.may_hide_in(str(ws)) and not r.may_hide_in(f"{ws}/plain/deep")  # Edit, ask: not read rules
    assert r.may_hide_in(f"{ws}/ign") and r.may_hide_in(f"{ws}/ign/sub")  # in force below its folder
    assert r.may_hide_in(f"{ws}/cl/a") and not r.may_hide_in(f"{ws}/cl") and not r.may_hide_in(f"{ws}/clx")
    assert r.may_hide_in(f"{ws}/cl/a/f.txt/in")  # under a hidden path (a folder so named)
    assert r.may_hide_in(f"{ws}/other") and r.may_hide_in(f"{ws}/w/z") and not r.may_hide_in(f"{ws}/v")
    assert not r.may_hide_in(str(home))  # outside every rule's base
    assert r.read_source(f"{ws}/ign/sub/a.x") == "ign/.cursorignore"
    assert r.read_source(f"{ws}/cl/a/f.txt") == r.read_source(f"{ws}/other/exact") == ".claude/settings.json"
    assert r.read_source(f"{ws}/w/z/q") == ".claude/settings.json"
    assert r.read_source(f"{ws}/cl/f.txt") is None and r.read_source(f"{ws}/plain/deep/f") is None


@pytest.mark.parametrize(
    ("line", "lead"),
    [("/a/b/c.txt", "a/b/c.txt"), ("/a/*/c", "a/"), ("a/b?", "a/b"), ("/a/[bc]", "a/"), ("name", ""),
     ("name/", ""), ("**/x", ""), ("/a/b/", "a/b"), ("/a/b  ", "a/b"), ("/a\\*b/c", "a"), ("/x", "x"),
     ("/a/bc ", "a/bc"), ("/a/X/", "a/X")],
)  # fmt: skip
def test_literal_start_is_what_every_hidden_path_begins_with(line: str, lead: str) -> None:
    assert literal_start(line) == lead


def test_a_new_ignore_file_ends_the_short_cut_on_the_next_call(ws: Path, home: Path) -> None:
    (ws / "a").mkdir()
    r = rules_in(ws, home)
    assert not r.may_hide_in(f"{ws}/a") and r.read_source(f"{ws}/a/f.key") is None
    (ws / "a" / ".aiignore").write_text("*.key\n")
    assert not r.may_hide_in(f"{ws}/a")  # the same call: remembered
    r.check()
    assert r.may_hide_in(f"{ws}/a") and r.read_source(f"{ws}/a/f.key") == "a/.aiignore"


def test_a_write_says_what_guards_its_file(ws: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Workspace.resolve_for_write: a deny rule refuses; an ask rule, a rule file and a hidden
    file are written only when asked, each called for what it is (the question's first line);
    a secret keeps the default words, a plain file is not guarded."""
    monkeypatch.setenv("HOME", str(home))
    settings(ws / ".claude" / "settings.json", deny=["Edit(./locked/**)"], ask=["Write(./asked.txt)"])
    (ws / ".cursorignore").write_text("hidden.txt\n")
    workspace = Workspace(workdir=ws, secrets=SecretMatcher((), rules_in(ws, home)))
    with pytest.raises(PathError, match=r"denied for writing by a rule in `\.claude/settings\.json`"):
        workspace.resolve_for_write("locked/f.txt", "write")
    said = {rel: workspace.resolve_for_write(rel, "write") for rel in
            ("asked.txt", ".cursorignore", "hidden.txt", ".env", "plain.txt")}  # fmt: skip
    assert said["asked.txt"].guarded_as == "ASKED about always, by a rule in `.claude/settings.json`"
    assert said[".cursorignore"].guarded_as.startswith("CLIENT RULE file")
    assert (
        said["hidden.txt"].guarded_as == "SENSITIVE file (hidden from AI tools by a rule in `.cursorignore`)"
    )
    assert said[".env"].sensitive and said[".env"].guarded_as == ""
    assert not said["plain.txt"].sensitive and said["plain.txt"].guarded_as == ""
    assert all(said[rel].sensitive for rel in ("asked.txt", ".cursorignore", "hidden.txt"))
