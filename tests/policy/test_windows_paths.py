"""Windows path semantics (issue 15 item 2) as pure logic: policy with ``ntpath`` rules, on any OS.

The workspace is ``C:\\proj`` (a string: nothing here touches a disk, ``ntpath.realpath`` off
Windows is lexical) and compares names without case, as NTFS does by default.
"""

from __future__ import annotations

import ntpath
import os
from pathlib import Path

import pytest

from filegate.errors import PathError
from filegate.policy import pathrules
from filegate.policy.pathrules import POSIX, WINDOWS
from filegate.policy.workspace import Workspace

PROJ = "C:\\proj"


def win(**kw: object) -> Workspace:
    return Workspace(Path(PROJ), rules=WINDOWS, case_insensitive=True, **kw)  # type: ignore[arg-type]


# --- drive letters, slashes, prefixes ---------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        "c:\\proj\\a.txt",
        "C:\\PROJ\\a.txt",
        "C:/proj/a.txt",
        "c:/Proj\\sub/../a.txt",
        "a.txt",
        "sub\\..\\a.txt",
    ],
)
def test_drive_case_and_both_slash_kinds_name_one_file_inside(raw: str) -> None:
    rp = win(confine=True).resolve(raw)
    assert rp.inside
    assert str(rp.real).casefold() == "c:\\proj\\a.txt" and str(rp.real).startswith("C:\\")


def test_a_sibling_with_a_common_prefix_is_outside_in_either_case() -> None:
    with pytest.raises(PathError, match="outside the workspace"):
        win(confine=True).resolve("C:\\PROJ-evil\\a.txt")
    assert not win().resolve("c:/proj-evil/a.txt").inside


def test_another_drive_is_outside() -> None:
    assert not win().resolve("D:\\proj\\a.txt").inside
    with pytest.raises(PathError, match="is not an absolute path"):
        win().resolve("..\\..\\..\\Windows\\win.ini").real  # noqa: B018


@pytest.mark.parametrize("raw", ["C:a.txt", "c:..\\secret", "C:"])
def test_a_drive_relative_path_is_refused(raw: str) -> None:
    with pytest.raises(PathError, match="relative to a drive's own current directory"):
        win().resolve(raw)


def test_the_long_path_prefix_is_normalised_then_checked() -> None:
    rp = win(confine=True).resolve("\\\\?\\C:\\proj\\a.txt")
    assert rp.inside and str(rp.real) == "C:\\proj\\a.txt"
    with pytest.raises(PathError, match="outside the workspace"):
        win(confine=True).resolve("\\\\?\\C:\\Windows\\win.ini")


@pytest.mark.parametrize(
    "raw",
    [
        "\\\\.\\PhysicalDrive0",
        "\\\\.\\C:\\proj\\a.txt",
        "//./pipe/x",
        "\\\\?\\GLOBALROOT\\Device\\HarddiskVolume1\\proj\\a.txt",
        "\\\\?\\Volume{26a21bda-a627-11d7-9931-806e6f6e6963}\\proj\\a.txt",
    ],
)
def test_device_and_volume_namespaces_are_refused(raw: str) -> None:
    with pytest.raises(PathError, match="device or volume namespace"):
        win().resolve(raw)


@pytest.mark.parametrize(
    "raw", ["\\\\attacker\\share\\x.txt", "//attacker/share/x", "\\\\?\\UNC\\attacker\\s\\x"]
)
def test_a_unc_path_to_another_share_is_refused_before_any_lookup(
    raw: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_lookup(path: str) -> str:  # a mock on purpose: resolving would contact the server
        raise AssertionError(f"looked up {path}")

    monkeypatch.setattr(ntpath, "realpath", no_lookup)
    with pytest.raises(PathError, match="another machine's share"):
        win().resolve(raw)


def test_a_workspace_on_a_share_takes_paths_on_that_share() -> None:
    ws = Workspace(Path("\\\\srv\\share\\proj"), rules=WINDOWS, case_insensitive=True, confine=True)
    assert ws.resolve("\\\\SRV\\Share\\proj\\a.txt").inside
    assert ws.resolve("//srv/share/proj/sub/b.txt").inside
    assert ws.resolve("\\\\?\\UNC\\srv\\share\\proj\\c.txt").inside
    with pytest.raises(PathError, match="outside the workspace"):
        ws.resolve("\\\\srv\\share\\other\\x.txt")
    with pytest.raises(PathError, match="another machine's share"):
        ws.resolve("\\\\srv2\\share\\proj\\a.txt")


# --- names Win32 rewrites or refuses ----------------------------------------------------------


@pytest.mark.parametrize("raw", [".env.", ".env ", "a.txt.", "a.txt . .", "sub.\\a.txt", "C:\\proj\\dir \\x"])
def test_a_name_ending_in_a_dot_or_space_is_refused(raw: str) -> None:
    with pytest.raises(PathError, match="ending in a dot or a space"):
        win().resolve(raw)


@pytest.mark.parametrize(
    "raw",
    ["CON", "nul", "NUL.txt", "com1", "COM9.log", "lpt1.tar.gz", "AUX.h", "prn", "CON .txt", "COM¹", "conin$",
     "CONOUT$", "sub\\nul", "C:\\proj\\sub\\Lpt3.c", "COM0"],
)  # fmt: skip
def test_reserved_device_names_are_refused_with_any_extension(raw: str) -> None:
    with pytest.raises(PathError, match="reserved Windows device name"):
        win().resolve(raw)


@pytest.mark.parametrize("raw", ["CONSOLE.txt", "nullable.py", "com10", "LPT10.txt", "auxiliary", "icon"])
def test_names_that_only_start_like_a_device_are_files(raw: str) -> None:
    assert win().resolve(raw).inside


@pytest.mark.parametrize(
    "raw", ["file.txt::$DATA", ".env:stream", "a.txt:Zone.Identifier", "dir:s\\a.txt", "xy:$DATA"]
)
def test_alternate_data_streams_are_refused(raw: str) -> None:
    with pytest.raises(PathError, match="alternate data stream"):
        win().resolve(raw)


@pytest.mark.parametrize(
    "path",
    [
        "C:\\proj\\.env:stream",
        "C:\\proj\\.env::$DATA",
        "C:\\proj\\.ENV.",
        "C:\\proj\\.env ",
        "C:\\proj\\.env. . ",
        "C:/proj/.Env",
        "C:\\proj\\id_rsa.",
        "C:\\proj\\.aws\\credentials:x",
        "C:\\proj\\.git.\\config",
        "c:\\proj\\server.PEM ",
    ],
)
def test_the_secret_filter_judges_a_name_as_windows_opens_it(path: str) -> None:
    assert win().is_sensitive(path)


@pytest.mark.parametrize("path", ["C:\\proj\\env.txt", "C:\\proj\\.env.example", "C:\\proj\\notes:.env"])
def test_the_secret_filter_leaves_other_names_alone(path: str) -> None:
    assert not win().is_sensitive(path)


def test_a_stream_of_a_secret_under_posix_rules_is_a_different_name() -> None:
    # On Linux `.env:stream` is a file of its own: it is not the .env file.
    assert POSIX.secret_key("/p/.env:stream") == "/p/.env:stream"


# --- 8.3 short names and junctions ------------------------------------------------------------


@pytest.mark.parametrize(
    "raw", ["C:\\PROGRA~1\\app\\config.txt", "ENV~1", "sub\\SECRET~2.TXT", "C:\\proj\\DOCUME~12\\a.txt"]
)
def test_a_short_name_left_after_resolution_is_refused(raw: str) -> None:
    with pytest.raises(PathError, match="8.3 short name"):
        win().resolve(raw)


def test_a_short_name_that_resolves_to_its_long_name_is_judged_by_the_long_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Simulated GetFinalPathNameByHandle (a mock: no NTFS here): ENV~1 is the short name of .env.
    monkeypatch.setattr(ntpath, "realpath", lambda p: p.replace("ENV~1", ".env"))
    ws = win()
    with pytest.raises(PathError, match="appears to contain secrets"):
        ws.resolve_for_read("C:\\proj\\ENV~1")
    monkeypatch.setattr(ntpath, "realpath", lambda p: p.replace("C:\\proj\\OUTSID~1", "C:\\outside"))
    with pytest.raises(PathError, match="is not an absolute path"):
        ws.resolve("OUTSID~1\\a.txt")


@pytest.mark.parametrize("name", ["file~name.txt", "a~b", "~1", "verylongname~1.txt", "NOTE~1.TEXT"])
def test_tilde_names_that_are_not_short_name_shaped_are_files(name: str) -> None:
    assert win().resolve(name).inside


def test_a_junction_is_judged_by_its_target(monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulated junction (a mock: ntpath.realpath resolves junctions only on Windows).
    monkeypatch.setattr(ntpath, "realpath", lambda p: p.replace("C:\\proj\\j", "C:\\Users\\me"))
    with pytest.raises(PathError, match="is not an absolute path"):
        win().resolve("j\\.ssh\\notes.txt")
    with pytest.raises(PathError, match="outside the workspace"):
        win(confine=True).resolve("C:\\proj\\j\\notes.txt")


def test_roots_narrow_with_windows_rules() -> None:
    ws = win().narrowed([Path("c:/PROJ/sub")])
    assert ws.dirs == (Path("C:\\PROJ\\sub"),)
    assert ws.contains("C:\\proj\\SUB\\a.txt") and not ws.contains("C:\\proj\\a.txt")


# --- which rules apply --------------------------------------------------------------------------


def test_windows_rules_apply_on_windows() -> None:
    assert pathrules.for_this_os("nt") is WINDOWS
    assert pathrules.for_this_os("posix") is POSIX
    assert pathrules.for_this_os() is (WINDOWS if os.name == "nt" else POSIX)
    assert Workspace(Path("/p")).rules is pathrules.for_this_os()


@pytest.mark.parametrize("name", ["nul", "a:b", "x.", "CON.txt", "ENV~1", "b "])
def test_posix_rules_take_these_names_as_ordinary_files(ws: Path, name: str) -> None:
    (ws / name).write_text("x")
    rp = Workspace(ws, rules=POSIX).resolve(name)
    assert rp.inside and rp.real == ws / name and os.path.isfile(rp.real)


# --- the whole sentence of each refusal (what the model reads to correct its call) -------------


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("\\\\.\\PhysicalDrive0", "names a Windows device or volume namespace, not a file path"),
        ("\\\\?\\GLOBALROOT\\x", "names a Windows device or volume namespace, not a file path"),
        ("C:a.txt", "is relative to a drive's own current directory; give the full path (`C:\\dir\\file`)"),
        ("a.txt:stream", "names an alternate data stream (`name:stream`); give the file's own path"),
        ("sub\\x.txt.", "has a name ending in a dot or a space, which Windows strips (it would open another file)"),
        ("sub\\nul.txt", "is a reserved Windows device name, not a file"),
        ("\\\\attacker\\share\\x.txt", "is on another machine's share; only shares that hold the workspace are used"),
        ("ENV~1", "has a part shaped like a Windows 8.3 short name (ENV~1) that is not a long name on disk; "
                  "give the file's long name"),
    ],
)  # fmt: skip
def test_each_refusal_says_its_whole_sentence(raw: str, why: str) -> None:
    with pytest.raises(PathError) as err:
        win(confine=True).resolve(raw)
    assert err.value.message == f"`{raw}` {why}."
    assert err.value.brief == "Invalid path"


@pytest.mark.parametrize(
    ("raw", "real"),
    [
        ("sub\\.\\a.txt", "C:\\proj\\sub\\a.txt"),  # `.` is a step, not a name ending in a dot
        (".\\a.txt", "C:\\proj\\a.txt"),
        ("sub\\FIX", "C:\\proj\\sub\\FIX"),  # ends in a letter, not a dot or a space
        ("\\\\?\\c:\\proj\\a.txt", "C:\\proj\\a.txt"),  # the long-path prefix on a lower-case drive
    ],
)
def test_names_windows_opens_as_they_are_are_taken(raw: str, real: str) -> None:
    rp = win(confine=True).resolve(raw)
    assert rp.inside and str(rp.real) == real


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("C:/proj/.ssh./id_rsa", "C:/proj/.ssh/id_rsa"),  # forward slashes: every part is judged
        ("\\\\srv\\share\\a\\.env. ", "//srv/share/a/.env"),  # a share's drive in the key's form
        ("C:\\proj\\.\\x.txt:s", "C:/proj/./x.txt"),  # `.` and `..` are kept as they are
        ("C:\\proj\\..\\x:a:b", "C:/proj/../x"),
    ],
)
def test_the_secret_key_is_each_part_as_windows_opens_it(path: str, key: str) -> None:
    assert WINDOWS.secret_key(path) == key


def test_containment_takes_either_slash_on_windows_and_only_its_own_on_posix() -> None:
    assert WINDOWS.within("C:/proj/a", "C:\\proj", fold_case=False)
    assert WINDOWS.within("C:\\proj\\a", "C:/proj/", fold_case=False)
    assert not WINDOWS.within("C:/proj-evil/a", "C:\\proj", fold_case=False)
    assert not POSIX.within("/proj\\a", "/proj", fold_case=False)  # a backslash is a name's character
    assert WINDOWS.unc_share("\\\\Srv\\Share\\a") == "\\\\srv\\share"
    assert POSIX.unc_share("\\\\srv\\share\\a") is None and WINDOWS.unc_share("C:\\a") is None
