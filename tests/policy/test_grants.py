"""policy/grants.py (SPEC §11): what a grant covers, decided from the path whatever a request
says of itself; a set only whole; the user's own allow rules, never a workspace's; and handles
that verify only as minted (forged, tampered, expired, another workspace or key: no grant).
The tools' side through real clients is tests/server/test_grants.py."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import struct
import time
from pathlib import Path

import pytest

from filegate.policy.grants import (
    Grant,
    asks_always,
    describe,
    duration,
    new_grant_id,
    offer,
    seal,
    top_folder,
    unasked,
    unseal,
)
from filegate.policy.secrets import SecretMatcher
from filegate.policy.workspace import Workspace
from filegate.settings import Settings
from filegate.tools.search.ignores import client_rules_of

KEY = bytes(range(32))
NOW = 1_900_000_000.0


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    h = Path(os.path.realpath(tmp_path)) / "home"
    (h / ".claude").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(h))
    return h


def workspace(ws: Path, *add: Path, rules: bool = True) -> Workspace:
    settings = Settings(workdir=ws, add_dirs=list(add), client_rules=rules)
    client = client_rules_of(settings)
    w = Workspace(ws, tuple(add), secrets=SecretMatcher((), client))
    w.check_client_rules()
    return w


def folder(ws: Path, name: str, expires: float | None = None) -> Grant:
    return Grant("folder", str(ws / name), expires, new_grant_id())


# --- the folder a grant names --------------------------------------------------------------------


def test_the_top_folder_is_the_first_folder_below_the_workspace_never_the_root_or_outside(
    ws: Path, outside: Path, home: Path
) -> None:
    w = workspace(ws)
    assert top_folder(w, f"{ws}/src/pkg/deep/a.py") == f"{ws}/src"
    assert top_folder(w, f"{ws}/src/a.py") == f"{ws}/src"
    assert top_folder(w, f"{ws}/a.py") is None  # directly in the workspace: no folder
    assert top_folder(w, f"{outside}/sub/a.py") is None
    assert top_folder(w, f"{ws}-evil/src/a.py") is None  # component-wise, not a prefix


def test_an_added_directory_has_its_own_top_folders(ws: Path, tmp_path: Path, home: Path) -> None:
    extra = Path(os.path.realpath(tmp_path)) / "extra"
    (extra / "lib").mkdir(parents=True)
    w = workspace(ws, extra)
    assert top_folder(w, f"{extra}/lib/x.py") == f"{extra}/lib"
    assert top_folder(w, f"{extra}/x.py") is None  # its root alone is never granted


def test_a_question_offers_the_file_and_its_folder_a_set_only_a_common_folder(ws: Path, home: Path) -> None:
    w = workspace(ws)
    one = offer(w, [ws / "src" / "a.py"])
    assert one is not None and one.file == f"{ws}/src/a.py" and one.folder == f"{ws}/src"
    root_file = offer(w, [ws / "a.py"])
    assert root_file is not None and root_file.file == f"{ws}/a.py" and root_file.folder is None
    both = offer(w, [ws / "src" / "a.py", ws / "src" / "b" / "c.py"])
    assert both is not None and both.file is None and both.folder == f"{ws}/src"
    apart = offer(w, [ws / "src" / "a.py", ws / "docs" / "b.md"])
    assert apart is not None and apart.file is None and apart.folder is None


def test_nothing_is_offered_outside_or_for_a_path_asked_about_every_time(
    ws: Path, outside: Path, home: Path
) -> None:
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"ask": ["Edit(src/gen/**)"]}}))
    (ws / "src").mkdir()
    (ws / "src" / ".cursorignore").write_text("private/\n")
    w = workspace(ws)
    for path in (
        outside / "a.txt",
        ws / "src" / ".env",  # a secret pattern
        ws / "src" / "id_rsa",
        ws / "src" / ".cursorignore",  # a rule file itself
        ws / ".claude" / "settings.json",
        ws / "src" / "private" / "x.py",  # hidden by a rule
        ws / "src" / "gen" / "out.py",  # an ask rule's path
    ):
        assert offer(w, [path]) is None, path
        assert asks_always(w, str(path)) or path.parent == outside
    assert offer(w, [ws / "src" / "a.py", ws / "src" / ".env"]) is None  # one such path: none


# --- what a grant covers ------------------------------------------------------------------------


def test_a_folder_grant_covers_its_folder_only_and_never_what_is_asked_always(ws: Path, home: Path) -> None:
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"ask": ["Edit(src/gen/**)"]}}))
    w = workspace(ws)
    grants = [folder(ws, "src")]
    assert unasked(w, [ws / "src" / "a.py"], grants, NOW) == "grant"
    assert unasked(w, [ws / "src" / "deep" / "b.py"], grants, NOW) == "grant"
    assert unasked(w, [ws / "docs" / "a.md"], grants, NOW) is None
    assert unasked(w, [ws / "srcx" / "a.py"], grants, NOW) is None  # a sibling sharing the prefix
    assert unasked(w, [ws / "a.py"], grants, NOW) is None
    # Sensitive, a rule file, an ask rule's path: never, whatever the grant says.
    for path in (ws / "src" / ".env", ws / "src" / ".aiignore", ws / "src" / "gen" / "x.py"):
        assert unasked(w, [path], grants, NOW) is None, path


def test_a_grant_even_if_it_named_a_secret_itself_covers_nothing_asked_always(ws: Path, home: Path) -> None:
    """By construction: the verdict is the path's, not the grant's."""
    w = workspace(ws)
    grants = [Grant("file", str(ws / ".env"), None, new_grant_id()), Grant("folder", str(ws / ".ssh"))]
    assert unasked(w, [ws / ".env"], grants, NOW) is None
    assert unasked(w, [ws / ".ssh" / "config2"], grants, NOW) is None


def test_a_file_grant_covers_that_file_alone(ws: Path, home: Path) -> None:
    w = workspace(ws)
    grants = [Grant("file", str(ws / "src" / "a.py"))]
    assert unasked(w, [ws / "src" / "a.py"], grants, NOW) == "grant"
    for other in ("src/a.pyc", "src/a.py/x", "src/b.py"):
        assert unasked(w, [ws / other], grants, NOW) is None, other


def test_a_set_passes_only_when_every_path_is_covered(ws: Path, home: Path) -> None:
    w = workspace(ws)
    grants = [folder(ws, "src"), Grant("file", str(ws / "README.md"))]
    inside = [ws / "src" / "a.py", ws / "src" / "b" / "c.py", ws / "README.md"]
    assert unasked(w, inside, grants, NOW) == "grant"
    assert unasked(w, [*inside, ws / "docs" / "x.md"], grants, NOW) is None
    assert unasked(w, [*inside, ws / "src" / ".env"], grants, NOW) is None


def test_an_expired_grant_covers_nothing(ws: Path, home: Path) -> None:
    w = workspace(ws)
    assert unasked(w, [ws / "src" / "a.py"], [folder(ws, "src", NOW + 1)], NOW) == "grant"
    assert unasked(w, [ws / "src" / "a.py"], [folder(ws, "src", NOW)], NOW) is None


def test_a_grant_covers_nothing_outside_the_workspace_it_sees(ws: Path, home: Path) -> None:
    """Roots narrowed the workspace to src/: a grant of docs/ no longer covers docs/."""
    w = workspace(ws).narrowed([ws / "src"])
    assert unasked(w, [ws / "docs" / "a.md"], [folder(ws, "docs")], NOW) is None


# --- the user's own allow rules ---------------------------------------------------------------


def allow(path: Path, *rules: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": {"allow": list(rules)}}))


def test_the_users_allow_rules_count_and_a_workspaces_never(ws: Path, home: Path) -> None:
    allow(home / ".claude" / "settings.json", "Edit(src/**)", "Write(//tmp/filegate-allowed/**)")
    allow(ws / ".claude" / "settings.json", "Edit(**)", "Write(**)")
    allow(ws / ".claude" / "settings.local.json", "Edit(**)")
    w = workspace(ws)
    assert unasked(w, [ws / "src" / "a.py"], [], NOW) == "allow-rule"
    assert unasked(w, [ws / "docs" / "a.md"], [], NOW) is None  # the repository's Edit(**): nothing
    assert unasked(w, [Path("/tmp/filegate-allowed/x")], [], NOW) == "allow-rule"
    assert unasked(w, [ws / "src" / ".env"], [], NOW) is None  # never a secret
    assert unasked(w, [ws / "src" / "a.py"], [], NOW, allow_rules=False) is None


def test_an_allow_rule_gives_way_to_ask_rules_and_bare_tool_names_allow_nothing(ws: Path, home: Path) -> None:
    allow(home / ".claude" / "settings.json", "Edit(src/**)", "Edit", "Write()", "Read(**)")
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"ask": ["Edit(src/gen/**)"]}}))
    w = workspace(ws)
    assert unasked(w, [ws / "src" / "gen" / "x.py"], [], NOW) is None
    assert unasked(w, [ws / "docs" / "a.md"], [], NOW) is None  # `Edit` alone names no path here
    assert unasked(w, [ws / "src" / "a.py"], [], NOW) == "allow-rule"


def test_client_rules_off_reads_no_allow_rule(ws: Path, home: Path) -> None:
    allow(home / ".claude" / "settings.json", "Edit(**)")
    assert unasked(workspace(ws, rules=False), [ws / "a.py"], [], NOW) is None


# --- handles -----------------------------------------------------------------------------------


def test_a_handle_round_trips_short_and_bound_to_its_target(ws: Path, home: Path) -> None:
    w = workspace(ws)
    grant = folder(ws, "src", NOW + 1800)
    handle = seal(KEY, w, grant)
    assert handle.startswith(grant.id + ".") and len(handle) < 60, handle
    assert str(ws) not in handle  # relative inside: the server's own path is not shown
    assert unseal(KEY, w, handle, NOW) == grant
    assert unseal(KEY, w, f"  {handle}\n", NOW) == grant


def test_a_tampered_forged_or_foreign_handle_is_no_grant(ws: Path, tmp_path: Path, home: Path) -> None:
    w = workspace(ws)
    grant = folder(ws, "src", NOW + 1800)
    handle = seal(KEY, w, grant)
    ident, _, body = handle.partition(".")
    flipped = body[:-1] + ("A" if body[-1] != "A" else "B")
    other = Path(os.path.realpath(tmp_path)) / "other"
    other.mkdir()
    for bad in (
        flipped,  # the MAC or the body changed
        f"{ident[:-1]}{'0' if ident[-1] != '0' else '1'}.{body}",  # another id
        handle.replace("g-", "G-", 1),
        "g-00000000." + "A" * 40,  # made up
        "g-zz.abc",
        f"{ident[:6]} {ident[6:]}.{body}",  # a space in the id (bytes.fromhex would skip it)
        f"{ident[:6]}\t{ident[6:]}.{body}",
        "g-",
        "",
        handle + "x" * 7000,
    ):
        assert unseal(KEY, w, bad, NOW) is None, bad
    assert unseal(bytes(32), w, handle, NOW) is None  # another key
    assert unseal(KEY, workspace(other), handle, NOW) is None  # another workspace
    assert unseal(KEY, w, handle, NOW + 1800) is None  # expired
    # a forger's handle for another folder, sealed with a guessed key, is no grant either
    forged = seal(b"x" * 32, w, folder(ws, "docs", NOW + 60))
    assert unseal(KEY, w, forged, NOW) is None


def test_a_handle_names_the_added_directory_it_was_minted_under(ws: Path, tmp_path: Path, home: Path) -> None:
    extra = Path(os.path.realpath(tmp_path)) / "extra"
    (extra / "lib").mkdir(parents=True)
    w = workspace(ws, extra)
    grant = Grant("file", str(extra / "lib" / "x.py"), NOW + 60, new_grant_id())
    assert unseal(KEY, w, seal(KEY, w, grant), NOW) == grant
    # The same directories in another order are another workspace.
    (ws / "x").mkdir()
    assert unseal(KEY, workspace(extra, ws), seal(KEY, w, grant), NOW) is None


def test_words_a_result_uses(ws: Path, home: Path) -> None:
    w = workspace(ws)
    assert describe(w, folder(ws, "src")) == "edits under `src/`"
    assert describe(w, Grant("file", str(ws / "src" / "a.py"))) == "edits of `src/a.py`"
    assert describe(w, Grant("folder", str(ws / "we`ird\nname"))) == "edits under `we\\x60ird\\x0aname/`"
    assert [duration(s) for s in (1800, 3600, 7200, 90, 1, 86400)] == [
        "30 minutes", "1 hour", "2 hours", "90 seconds", "1 second", "1 day",
    ]  # fmt: skip
    assert time.time() < NOW  # the fixed clock above is in the future


# --- issue 55: what the mutation run showed untested ---------------------------------------------


def test_a_set_granted_in_part_and_allowed_by_rule_in_part_goes_by_the_grant(ws: Path, home: Path) -> None:
    """The log says what let a set through: the user's grant whenever one was used."""
    allow(home / ".claude" / "settings.json", "Edit(docs/**)")
    w = workspace(ws)
    grants = [folder(ws, "src")]
    granted, allowed = ws / "src" / "a.py", ws / "docs" / "a.md"
    assert unasked(w, [granted, allowed], grants, NOW) == "grant"
    assert unasked(w, [allowed, granted], grants, NOW) == "grant"
    assert unasked(w, [allowed, ws / "docs" / "b.md"], grants, NOW) == "allow-rule"


def test_on_a_case_folding_file_system_a_grant_covers_every_spelling(ws: Path, home: Path) -> None:
    """macOS and Windows by default (simulated by value, as tests/policy/test_case_folding.py
    does): the file system names `SRC/A.py` what the user granted as `src/a.py`."""
    folding = Workspace(ws, case_insensitive=True)
    upper = str(ws).upper()
    assert top_folder(folding, f"{upper}/SRC/a.py") == f"{ws}/SRC"
    src, one = folder(ws, "src"), Grant("file", str(ws / "src" / "a.py"))
    assert unasked(folding, [Path(f"{ws}/SRC/deep/b.py")], [src], NOW) == "grant"
    assert unasked(folding, [Path(f"{ws}/Src/A.PY")], [one], NOW) == "grant"
    assert unasked(folding, [Path(f"{ws}/SRC")], [src], NOW) is None  # the folder itself
    exact = Workspace(ws, case_insensitive=False)
    assert unasked(exact, [Path(f"{ws}/SRC/b.py")], [src], NOW) is None
    assert unasked(exact, [Path(f"{ws}/src/A.py")], [one], NOW) is None


def test_a_workspace_whose_name_ends_in_a_space_has_its_folders_granted(tmp_path: Path, home: Path) -> None:
    spaced = Path(os.path.realpath(tmp_path)) / "my project "
    (spaced / "src").mkdir(parents=True)
    w = workspace(spaced)
    assert top_folder(w, f"{spaced}/src/a.py") == f"{spaced}/src"
    grant = folder(spaced, "src", NOW + 60)
    unsealed = unseal(KEY, w, seal(KEY, w, grant), NOW)
    assert unsealed == grant
    assert unasked(w, [spaced / "src" / "a.py"], [unsealed], NOW) == "grant"


def test_every_handle_round_trips_whatever_its_last_characters(ws: Path, home: Path) -> None:
    """512 ids, fixed so the run is the same each time: a handle's base64 ends in any of its
    64 characters, and none is lost on the way back."""
    w = workspace(ws)
    for i in range(512):
        grant = Grant("file", str(ws / "src" / f"f{i}.py"), NOW + 60, f"g-{i:08x}")
        assert unseal(KEY, w, seal(KEY, w, grant), NOW) == grant


def craft(key: bytes, ident: str, head: tuple[int, bytes, int, bytes, int], rel: str) -> str:
    """A handle built by hand from the layout policy/grants.py documents: the id, then version,
    kind, expiry, the workspace's tag and the directory's index, then the relative path, then
    HMAC-SHA256 over "filegate-grant\\0" and all of that, cut to 96 bits; base64url unpadded."""
    body = bytes.fromhex(ident) + struct.pack(">BcI4sB", *head) + os.fsencode(rel)
    mac = hmac.new(key, b"filegate-grant\0" + body, hashlib.sha256).digest()[:12]
    return f"g-{ident}.{base64.urlsafe_b64encode(body[4:] + mac).decode().rstrip('=')}"


def tag(key: bytes, *dirs: Path) -> bytes:
    """The workspace's tag: HMAC-SHA256 over "filegate-grant-workspace\\0" and its directories
    joined by NUL, cut to 4 bytes."""
    joined = os.fsencode("\0".join(str(d) for d in dirs))
    return hmac.new(key, b"filegate-grant-workspace\0" + joined, hashlib.sha256).digest()[:4]


def test_a_handle_in_the_documented_layout_is_honoured_so_replicas_of_two_builds_agree(
    ws: Path, tmp_path: Path, home: Path
) -> None:
    """Replicas share the key; during a rolling upgrade one build mints and another verifies.
    The layout is version 1's: a handle made by hand from it is the one seal makes."""
    extra = Path(os.path.realpath(tmp_path)) / "extra"
    (extra / "lib").mkdir(parents=True)
    w = workspace(ws, extra)
    expires = int(NOW) + 600
    crafted = craft(KEY, "0123abcd", (1, b"d", expires, tag(KEY, ws, extra), 1), "lib")
    grant = Grant("folder", str(extra / "lib"), float(expires), "g-0123abcd")
    assert crafted == seal(KEY, w, grant)
    assert unseal(KEY, w, crafted, NOW) == grant


def test_even_a_handle_sealed_with_the_key_names_nothing_outside_the_workspace(
    ws: Path, tmp_path: Path, home: Path
) -> None:
    """Whatever a handle verifies as (a key that leaked, a minting bug), the path it names is
    checked again: a directory the workspace does not have, a `..`, no path, an unknown kind or
    version is no grant."""
    w = workspace(ws)
    good = tag(KEY, ws)
    expires = int(NOW) + 600
    assert unseal(KEY, w, craft(KEY, "0000abcd", (1, b"d", expires, good, 0), "src"), NOW) is not None
    for head, rel in (
        ((1, b"d", expires, good, 1), "src"),  # the workspace has one directory
        ((1, b"d", expires, good, 7), "src"),
        ((1, b"d", expires, good, 0), "src/../.."),
        ((1, b"d", expires, good, 0), "../etc"),
        ((1, b"d", expires, good, 0), "src/.. /../x"),
        ((1, b"d", expires, good, 0), ""),  # the workspace directory itself
        ((1, b"x", expires, good, 0), "src"),
        ((2, b"d", expires, good, 0), "src"),
        ((1, b"d", expires, bytes(4), 0), "src"),
    ):
        crafted = craft(KEY, "0000abcd", head, rel)
        assert unseal(KEY, w, crafted, NOW) is None, (head, rel)
    # a body cut short of its header, its MAC right
    body = bytes.fromhex("0000abcd") + b"\x01d"
    mac = hmac.new(KEY, b"filegate-grant\0" + body, hashlib.sha256).digest()[:12]
    short = f"g-0000abcd.{base64.urlsafe_b64encode(body[4:] + mac).decode().rstrip('=')}"
    assert unseal(KEY, w, short, NOW) is None


def test_a_handle_with_its_id_cut_elsewhere_is_no_grant(ws: Path, home: Path) -> None:
    """The MAC covers the id and the body as one string: moving a byte from the body into the
    id (or back) keeps it valid, so the id's length is checked apart."""
    w = workspace(ws)
    handle = seal(KEY, w, folder(ws, "src", NOW + 1800))
    ident, _, body = handle[2:].partition(".")
    raw = base64.urlsafe_b64decode(body + "==")
    longer = f"g-{ident}{raw[:1].hex()}.{base64.urlsafe_b64encode(raw[1:]).decode().rstrip('=')}"
    shorter_raw = bytes.fromhex(ident)[-1:] + raw
    shorter = f"g-{ident[:-2]}.{base64.urlsafe_b64encode(shorter_raw).decode().rstrip('=')}"
    assert unseal(KEY, w, longer, NOW) is None
    assert unseal(KEY, w, shorter, NOW) is None
    assert unseal(KEY, w, f"g-{ident}.{body}é", NOW) is None  # not base64url
    assert unseal(KEY, w, f"g-{ident}.{body}.{body}", NOW) is None


def test_an_empty_set_is_never_let_through(ws: Path, home: Path) -> None:
    allow(home / ".claude" / "settings.json", "Edit(**)")
    assert unasked(workspace(ws), [], [folder(ws, "src")], NOW) is None


def test_the_top_folder_is_below_the_innermost_root_whatever_its_spelling(ws: Path, home: Path) -> None:
    """Roots a client sends on a case-folding file system, nested, spelled differently (upper
    case sorts first): the folder granted is the first below the innermost one."""
    (ws / "sub" / "lib").mkdir(parents=True)
    inner = str(ws / "sub").upper()
    w = Workspace(ws, roots=(Path(inner), ws), case_insensitive=True)
    assert top_folder(w, f"{ws}/sub/lib/x.py") == f"{inner}/lib"
