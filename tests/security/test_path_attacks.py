"""Path attacks against all six tools, under both --confine settings: nothing escapes.

Each case builds its trap in a fresh arena (``attack.build_layout``) and turns into a set of tool
calls: read, read as media, search, list, overwrite, create and edit — each aimed at the outside
files through the trap. Two servers face every case:

- ``--confine`` with ``--approval auto``: only the path rules stand between the call and the
  outside; nothing outside may be read or written, whatever the path.
- no confine, ``--approval ask``, a client without elicitation (Claude Desktop's setup): an
  absolute path outside may be *read* (Kimi's rule) but never written; a relative path may
  never reach outside, however it is dressed up.

In both, no byte of a sensitive file reaches the client, every failure is a clean isError (no
traceback, no masked crash), the server's own location is not revealed to a caller that did not
name it, and every outside file is byte-for-byte, inode-for-inode as it was.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call, connect
from tests.security.attack import (
    LISTING_MARKER,
    OUTSIDE_CANARY,
    PWNED,
    SECRET_CANARY,
    Layout,
    build_layout,
    leaks,
    result_payload,
    snapshot,
)

# Their writes are about something else: see tests/tools/test_read_guard.py for the guard.
pytestmark = pytest.mark.usefixtures("read_guard_off")

Call = tuple[str, dict[str, Any]]
READERS = {"ReadFile", "ReadMediaFile", "Grep"}  # tools Kimi's rule lets read absolute paths outside
# Texts that only an unhandled exception produces.
CRASH_SIGNS = ("Traceback", 'File "', "Error calling tool", "Internal error")


@dataclass
class Trap:
    """What a case hands the tools: a way to name outside files, an outside dir, extra calls."""

    file: Callable[[str], str] | None = None
    directory: str | None = None
    extra: list[Call] = field(default_factory=list)


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[Layout], Trap]


CASES: list[Case] = []


def case(name: str) -> Callable[[Callable[[Layout], Trap]], Callable[[Layout], Trap]]:
    def register(fn: Callable[[Layout], Trap]) -> Callable[[Layout], Trap]:
        CASES.append(Case(name, fn))
        return fn

    return register


def in_dir(d: str) -> Trap:
    """A trap that names an outside directory ``d``: files are ``d/<name>``."""
    return Trap(file=lambda name: f"{d}/{name}", directory=d)


def rel(lay: Layout, target: Path) -> str:
    return os.path.relpath(target, lay.ws)


def link_each(lay: Layout, prefix: str, target_dir: Path, hops: int = 0) -> Callable[[str], str]:
    """One symlink per outside file name (made on demand), through ``hops`` inside links."""

    def make(name: str) -> str:
        link = lay.ws / f"{prefix}{name}"
        if not os.path.lexists(link):
            current = target_dir / name
            for hop in range(hops):
                step = lay.ws / f"{prefix}hop{hop}-{name}"
                os.symlink(current, step)
                current = step
            os.symlink(current, link)
        return link.name

    return make


# --- .. chains ------------------------------------------------------------------------------


@case("dotdot")
def _dotdot(lay: Layout) -> Trap:
    return in_dir("../outside")


@case("dot-slash-dotdot")
def _dot_dotdot(lay: Layout) -> Trap:
    return in_dir("./../outside")


@case("into-subdir-then-out")
def _sub_out(lay: Layout) -> Trap:
    return in_dir("sub/../../outside")


@case("through-missing-dir-then-out")
def _missing_out(lay: Layout) -> Trap:
    return in_dir("no-such-dir/../../outside")


@case("dotdot-past-the-root")
def _past_root(lay: Layout) -> Trap:
    return in_dir("../" * 40 + str(lay.outside).lstrip("/"))


@case("doubled-slashes-and-dots")
def _slashes(lay: Layout) -> Trap:
    return in_dir(".//sub/.//..//../outside/.")


@case("long-climb-through-missing-dirs")
def _long_climb(lay: Layout) -> Trap:
    return in_dir("x/" * 1200 + "../" * 1201 + "outside")


@case("backslash-dotdot")
def _backslash(lay: Layout) -> Trap:
    return in_dir("..\\outside")


@case("percent-encoded-dotdot")
def _percent(lay: Layout) -> Trap:
    return in_dir("%2e%2e/outside")


@case("file-uri")
def _file_uri(lay: Layout) -> Trap:
    return in_dir(lay.outside.as_uri())


# --- absolute paths -------------------------------------------------------------------------


@case("absolute")
def _absolute(lay: Layout) -> Trap:
    return in_dir(str(lay.outside))


@case("absolute-via-workspace-dotdot")
def _abs_dotdot(lay: Layout) -> Trap:
    return in_dir(f"{lay.ws}/../outside")


@case("absolute-double-slash-and-dot")
def _abs_slash(lay: Layout) -> Trap:
    return in_dir(f"/{lay.outside}/./")


@case("prefix-sibling-absolute")
def _evil_abs(lay: Layout) -> Trap:
    return in_dir(str(lay.evil))


@case("prefix-sibling-relative")
def _evil_rel(lay: Layout) -> Trap:
    return in_dir(rel(lay, lay.evil))


@case("prefix-sibling-via-trailing-dash")
def _evil_glued(lay: Layout) -> Trap:
    return in_dir(f"{lay.ws}-evil")


# --- symlinks -------------------------------------------------------------------------------


@case("symlinked-dir-pointing-out")
def _ldir(lay: Layout) -> Trap:
    os.symlink(lay.outside, lay.ws / "ld")
    return in_dir("ld")


@case("symlinked-dir-pointing-out-absolute")
def _ldir_abs(lay: Layout) -> Trap:
    os.symlink(lay.outside, lay.ws / "ld")
    return in_dir(str(lay.ws / "ld"))


@case("symlinked-dir-with-relative-target")
def _ldir_rel(lay: Layout) -> Trap:
    os.symlink("../outside", lay.ws / "ldr")
    return in_dir("ldr")


@case("chained-dir-symlinks")
def _chain_dir(lay: Layout) -> Trap:
    os.symlink(lay.outside, lay.ws / "c3")
    os.symlink("c3", lay.ws / "c2")
    os.symlink(lay.ws / "c2", lay.ws / "c1")
    return in_dir("c1")


@case("symlink-to-parent")
def _up(lay: Layout) -> Trap:
    os.symlink("..", lay.ws / "up")
    return in_dir("up/outside")


@case("symlink-to-filesystem-root")
def _root(lay: Layout) -> Trap:
    os.symlink("/", lay.ws / "rootlink")
    return in_dir("rootlink" + str(lay.outside))


@case("symlink-then-dotdot-kernel-vs-lexical")
def _kernel_dotdot(lay: Layout) -> Trap:
    # Lexically "ksub/.." is the workspace; the kernel resolves ksub first: outside/sub/.. .
    os.symlink(lay.outside / "sub", lay.ws / "ksub")
    return in_dir("ksub/..")


@case("file-symlinks-pointing-out")
def _lfile(lay: Layout) -> Trap:
    return Trap(file=link_each(lay, "l-", lay.outside))


@case("file-symlinks-with-relative-targets")
def _lfile_rel(lay: Layout) -> Trap:
    def make(name: str) -> str:
        link = lay.ws / f"r-{name}"
        if not os.path.lexists(link):
            os.symlink(f"../outside/{name}", link)
        return link.name

    return Trap(file=make)


@case("chained-file-symlinks")
def _chain_file(lay: Layout) -> Trap:
    return Trap(file=link_each(lay, "ch-", lay.outside, hops=3))


@case("dangling-symlink-to-a-missing-outside-file")
def _dangling(lay: Layout) -> Trap:
    # Every link dangles: a write must not create the file it points at.
    return Trap(file=link_each(lay, "dg-", lay.outside / "not-yet"))


@case("symlink-loop")
def _loop(lay: Layout) -> Trap:
    os.symlink("loop2", lay.ws / "loop1")
    os.symlink("loop1", lay.ws / "loop2")
    return in_dir("loop1")


@case("self-referencing-symlink")
def _self(lay: Layout) -> Trap:
    os.symlink("selfie", lay.ws / "selfie")
    return Trap(file=lambda name: "selfie", directory="selfie")


@case("innocent-name-pointing-at-an-inside-secret")
def _inside_secret(lay: Layout) -> Trap:
    os.symlink(lay.ws / ".env", lay.ws / "notes.txt")
    os.symlink(lay.ws / ".env", lay.ws / "picture.png")
    return Trap(file=lambda name: "picture.png" if name.endswith(".png") else "notes.txt")


@case("innocent-name-pointing-at-an-outside-secret")
def _outside_secret(lay: Layout) -> Trap:
    os.symlink(lay.outside / "id_rsa", lay.ws / "config.txt")
    return Trap(file=lambda name: "config.txt")


@case("absolute-innocent-name-pointing-at-an-outside-secret")
def _outside_secret_abs(lay: Layout) -> Trap:
    os.symlink(lay.outside / ".env", lay.ws / "settings.txt")
    return Trap(file=lambda name: str(lay.ws / "settings.txt"))


@case("symlinked-parent-of-a-secret")
def _secret_dir(lay: Layout) -> Trap:
    os.symlink(lay.outside, lay.ws / "cfg")
    return Trap(file=lambda name: "cfg/.env" if name != "pic.png" else "cfg/pic.png", directory="cfg")


# --- home directories -----------------------------------------------------------------------


@case("tilde-home")
def _tilde(lay: Layout) -> Trap:
    return in_dir("~")


@case("tilde-home-dotdot")
def _tilde_dotdot(lay: Layout) -> Trap:
    return in_dir("~/../outside")


@case("tilde-other-user")
def _tilde_user(lay: Layout) -> Trap:
    return in_dir("~root/../" + str(lay.outside).lstrip("/"))


@case("tilde-unknown-user-stays-literal")
def _tilde_unknown(lay: Layout) -> Trap:
    return in_dir("~no-such-user-zz/../../outside")


# --- Unicode --------------------------------------------------------------------------------


@case("unicode-two-dot-leader")
def _two_dot(lay: Layout) -> Trap:
    return in_dir("\u2025/outside")


@case("unicode-fullwidth-dots-and-solidus")
def _fullwidth(lay: Layout) -> Trap:
    return in_dir("\uff0e\uff0e\uff0foutside")


@case("unicode-division-slash")
def _division(lay: Layout) -> Trap:
    return in_dir("..\u2215outside")


@case("unicode-zero-width-inside-dotdot")
def _zero_width(lay: Layout) -> Trap:
    return in_dir(".\u200b./outside")


@case("unicode-nfd-twin-of-the-workspace-absolute")
def _nfd_abs(lay: Layout) -> Trap:
    return in_dir(str(lay.nfd))


@case("unicode-nfd-twin-of-the-workspace-relative")
def _nfd_rel(lay: Layout) -> Trap:
    return in_dir(rel(lay, lay.nfd))


@case("unicode-uppercase-secret-names")
def _upper(lay: Layout) -> Trap:
    (lay.ws / "ID_RSA").write_text(f"{SECRET_CANARY}\n")
    (lay.ws / ".ENV").write_text(f"{SECRET_CANARY}\n")
    return Trap(file=lambda name: "ID_RSA" if name != ".env" else ".ENV")


# --- length and NUL -------------------------------------------------------------------------


@case("very-long-path")
def _long(lay: Layout) -> Trap:
    return in_dir("a/" * 3000 + "../" * 3001 + "outside")


@case("very-long-component")
def _long_name(lay: Layout) -> Trap:
    return in_dir("n" * 300 + "/../../outside")


@case("nul-byte-truncation")
def _nul(lay: Layout) -> Trap:
    return Trap(file=lambda name: f"plain.txt\x00/../../outside/{name}", directory=".\x00/../outside")


# --- /proc ----------------------------------------------------------------------------------


@case("proc-self-root")
def _proc_root(lay: Layout) -> Trap:
    return in_dir("/proc/self/root" + str(lay.outside))


@case("proc-self-cwd")
def _proc_cwd(lay: Layout) -> Trap:
    return in_dir("/proc/self/cwd/" + os.path.relpath(lay.outside, os.getcwd()))


@case("proc-self-fd-of-an-outside-dir")
def _proc_fd(lay: Layout) -> Trap:
    fd = os.open(lay.outside, os.O_RDONLY | os.O_DIRECTORY)
    OPEN_FDS.append(fd)
    return in_dir(f"/proc/self/fd/{fd}")


@case("proc-pid-root")
def _proc_pid(lay: Layout) -> Trap:
    return in_dir(f"/proc/{os.getpid()}/root{lay.outside}")


# --- patterns that climb --------------------------------------------------------------------


@case("glob-patterns-that-climb")
def _glob_climb(lay: Layout) -> Trap:
    os.symlink(lay.outside, lay.ws / "gl")
    patterns = ["../outside/*", "../*", "sub/../../outside/*", "{..,sub}/*", "{../outside,x}/*",
                "[.][.]/*", ".*/*", "gl/*", "gl/sub/*", "gl/**/*", "*/*/../../*", "/" + str(lay.outside)[1:] + "/*",
                "~/*", "\\.\\./outside/*"]  # fmt: skip
    return Trap(extra=[("Glob", {"pattern": p}) for p in patterns])


@case("glob-directory-that-climbs")
def _glob_dir(lay: Layout) -> Trap:
    dirs = [str(lay.outside), f"{lay.ws}/..", f"{lay.ws}/../outside", str(lay.evil), "/", "~", "../outside"]
    return Trap(extra=[("Glob", {"pattern": "*", "directory": d}) for d in dirs])


@case("grep-globs-that-climb")
def _grep_glob(lay: Layout) -> Trap:
    os.symlink(lay.outside, lay.ws / "gg")
    globs = ["../outside/*", "../**", str(lay.outside) + "/*", "**/../../**", "{../outside,x}/*",
             "gg/*", "gg/**", "!*.md", ".env", "*"]  # fmt: skip
    calls: list[Call] = [
        ("Grep", {"pattern": "CANARY", "glob": g, "output_mode": "content", "include_ignored": True})
        for g in globs
    ]
    calls += [("Grep", {"pattern": "CANARY", "type": t}) for t in ("all", "txt", "--files", "../x")]
    calls.append(("Grep", {"pattern": "CANARY", "path": "gg", "output_mode": "count_matches"}))
    return Trap(extra=calls)


@case("grep-of-the-workspace-with-links-pointing-out")
def _grep_ws(lay: Layout) -> Trap:
    os.symlink(lay.outside, lay.ws / "out-dir")
    os.symlink(lay.outside / "plain.txt", lay.ws / "out-file.txt")
    os.symlink(lay.outside / ".env", lay.ws / "out-secret.txt")
    modes = ("content", "files_with_matches", "count_matches")
    calls: list[Call] = [
        ("Grep", {"pattern": "CANARY", "output_mode": m, "include_ignored": True, "-i": True}) for m in modes
    ]
    calls += [("Glob", {"pattern": p}) for p in ("*", "out-dir/*", "*/*", "out-*")]
    return Trap(extra=calls)


OPEN_FDS: list[int] = []


# --- running a case -------------------------------------------------------------------------


def calls_for(trap: Trap) -> Iterator[Call]:
    f, d = trap.file, trap.directory
    if f is not None:
        yield "ReadFile", {"path": f("plain.txt")}
        yield "ReadFile", {"path": f(".env")}
        yield "ReadMediaFile", {"path": f("pic.png")}
        yield "Grep", {"pattern": "CANARY", "path": f("plain.txt"), "output_mode": "content"}
        yield "Grep", {"pattern": "TOKEN", "path": f("id_rsa"), "output_mode": "content"}
        yield "WriteFile", {"path": f("plain.txt"), "content": PWNED}
        yield "WriteFile", {"path": f("new.txt"), "content": PWNED}
        yield "StrReplaceFile", {"path": f("plain.txt"), "edit": {"old": OUTSIDE_CANARY, "new": PWNED}}
    if d is not None:
        yield "WriteFile", {"path": f"{d}/made/new.txt", "content": PWNED, "create_dirs": True}
        yield "Glob", {"pattern": "*", "directory": d}
        yield "Glob", {"pattern": "sub/*", "directory": d}
        yield "Grep", {"pattern": "CANARY", "path": d, "output_mode": "content", "include_ignored": True}
        yield "Grep", {"pattern": "CANARY", "path": d, "output_mode": "files_with_matches"}
    yield from trap.extra


def _absolute(args: dict[str, Any]) -> bool:
    raw = args.get("path", args.get("directory"))
    if not isinstance(raw, str):
        return False
    return os.path.isabs(os.path.expanduser(raw) if raw.startswith("~") else raw)


def check_result(lay: Layout, confine: bool, tool: str, args: dict[str, Any], result: Any) -> list[str]:
    """The promises for one call; returns what was broken, in words."""
    problems: list[str] = []
    found = leaks(result)
    may_read_outside = not confine and tool in READERS and _absolute(args)
    if SECRET_CANARY in found:
        problems.append("a sensitive file's bytes reached the client")
    if not may_read_outside and found & {OUTSIDE_CANARY, LISTING_MARKER}:
        problems.append("an outside file's bytes or listing reached the client")
    payload = result_payload(result)
    crash = [s for s in CRASH_SIGNS if s in payload]
    if crash:
        problems.append(f"an unhandled failure: {crash}")
    named = json.dumps(args, ensure_ascii=False) + "".join(
        os.path.expanduser(v) for v in args.values() if isinstance(v, str) and v.startswith("~")
    )
    if str(lay.base) not in named and str(lay.ws) in payload:
        problems.append("the server's workdir was revealed to a caller that did not give it (SPEC §2.9)")
    if result.is_error and not payload.strip():
        problems.append("an error without a message")
    return [f"{tool}({_short(args)}): {p}" for p in problems]


def _short(args: dict[str, Any]) -> str:
    text = json.dumps(args, ensure_ascii=False)
    return text if len(text) < 160 else text[:157] + "..."


SERVERS = {
    # confine: every outside path is refused; auto approval so only the rules stop a write.
    True: {"confine": True, "approval": "auto"},
    # no confine: Kimi's rule for reads; a client that cannot be asked, so outside writes fail.
    False: {"confine": False, "approval": "ask"},
}


@pytest.fixture
def lay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Layout]:
    layout = build_layout(tmp_path)
    monkeypatch.setenv("HOME", str(layout.home))
    yield layout
    while OPEN_FDS:
        os.close(OPEN_FDS.pop())


@pytest.mark.parametrize("confine", [True, False], ids=["confined", "unconfined"])
@pytest.mark.parametrize("attack", CASES, ids=[c.name for c in CASES])
async def test_path_attack_reaches_nothing_outside(lay: Layout, attack: Case, confine: bool) -> None:
    # Both protocol eras face the cases, alternating (the path rules do not depend on the era).
    mode = "auto" if (CASES.index(attack) + confine) % 2 else "legacy"
    before = snapshot(*lay.outside_dirs)
    trap = attack.build(lay)
    problems: list[str] = []
    async with connect(lay.ws, mode, **SERVERS[confine]) as client:
        for tool, args in calls_for(trap):
            result = await call(client, tool, **args)
            problems += check_result(lay, confine, tool, args, result)
        problems += await inside_calls_succeed(client, lay)
    after = snapshot(*lay.outside_dirs)
    changed = sorted(set(before.items()) ^ set(after.items()))
    assert not changed, f"outside files changed: {changed[:6]}"
    assert not problems, "\n".join(problems)


INSIDE_CANARY = "INSIDE-CONTROL-7d1e"


async def inside_calls_succeed(client: Any, lay: Layout) -> list[str]:
    """The positive control (issue 26): the same server, after the attacks, still serves every
    tool inside the workspace. A server that refused everything would pass the checks above."""
    control = lay.ws / "control-dir"
    control.mkdir(exist_ok=True)
    (control / "inside.txt").write_text(f"{INSIDE_CANARY}\n")
    expect: list[tuple[str, dict[str, Any], str]] = [
        ("ReadFile", {"path": "control-dir/inside.txt"}, INSIDE_CANARY),
        ("ReadMediaFile", {"path": "pic.png"}, ""),
        ("Grep", {"pattern": INSIDE_CANARY, "path": "control-dir", "output_mode": "content"}, INSIDE_CANARY),
        ("Glob", {"pattern": "*.txt", "directory": str(control)}, "inside.txt"),
        ("WriteFile", {"path": "control-dir/new.txt", "content": "made\n"}, ""),
        (
            "StrReplaceFile",
            {"path": "control-dir/inside.txt", "edit": {"old": INSIDE_CANARY, "new": "edited"}},
            "",
        ),
    ]
    problems = []
    for tool, args, needle in expect:
        result = await call(client, tool, **args)
        payload = result_payload(result)
        if result.is_error or needle not in payload:
            problems.append(f"inside control {tool}({_short(args)}) failed: {payload[:200]}")
    if (control / "inside.txt").read_text() != "edited\n" or not (control / "new.txt").exists():
        problems.append("the inside control writes did not land")
    return problems


def test_there_are_at_least_forty_attack_cases() -> None:
    assert len(CASES) >= 40, len(CASES)


# --- the harness can see a leak when there is one --------------------------------------------


async def test_the_harness_detects_a_legitimate_outside_read(lay: Layout) -> None:
    """Without --confine an absolute path outside is readable (Kimi's rule): the canary shows."""
    async with connect(lay.ws, "auto", confine=False) as c:
        text_read = await call(c, "ReadFile", path=str(lay.outside / "plain.txt"))
        image_read = await call(c, "ReadMediaFile", path=str(lay.outside / "pic.png"))
        grep = await call(
            c, "Grep", pattern="CANARY", path=str(lay.outside), output_mode="files_with_matches"
        )
    assert OUTSIDE_CANARY in leaks(text_read)
    assert OUTSIDE_CANARY in leaks(image_read)  # found in the decoded PNG bytes
    assert LISTING_MARKER in leaks(grep)
    assert SECRET_CANARY not in leaks(grep)


# --- hard links: the same inode under an inside name ----------------------------------------


async def test_hard_link_to_an_outside_file_is_never_written_through(lay: Layout, mode: str) -> None:
    """A hard link is a name inside the workspace for an outside inode. Writes replace the name
    (a new inode, renamed over it), so the outside file never changes.

    Reading it serves the shared bytes: no path rule can tell a hard link from any other inside
    file. With fs.protected_hardlinks=1 (Linux default) only a user who may already read and write
    the file can make such a link, so it reveals nothing that user could not read anyway.
    """
    outside_file = lay.outside / "plain.txt"
    os.link(outside_file, lay.ws / "hard.txt")
    (lay.ws / "keys").mkdir()
    os.link(lay.outside / "id_rsa", lay.ws / "keys" / "id_rsa")
    before = snapshot(*lay.outside_dirs)
    async with connect(lay.ws, mode, approval="auto", confine=True) as c:
        edit = await call(c, "StrReplaceFile", path="hard.txt", edit={"old": OUTSIDE_CANARY, "new": PWNED})
        write = await call(c, "WriteFile", path="hard.txt", content=PWNED, mode="append")
        secret = await call(c, "ReadFile", path="keys/id_rsa")
    assert not edit.is_error and not write.is_error
    assert snapshot(*lay.outside_dirs) == before
    assert os.stat(lay.ws / "hard.txt").st_ino != os.stat(outside_file).st_ino
    assert PWNED in (lay.ws / "hard.txt").read_text()
    assert secret.is_error and SECRET_CANARY not in leaks(secret)  # its own name is sensitive


# --- things that are not paths at all --------------------------------------------------------


async def test_proc_self_environ_and_mem_are_refused_when_confined(lay: Layout, mode: str) -> None:
    async with connect(lay.ws, mode, confine=True) as c:
        for p in ("/proc/self/environ", "/proc/self/mem", "/proc/self/cmdline", "/proc/self/fd/0"):
            r = await call(c, "ReadFile", path=p)
            assert r.is_error and "outside the workspace" in result_payload(r), p


async def test_unix_socket_inside_is_not_a_file_for_any_tool(lay: Layout, mode: str) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(lay.ws / "s.sock"))
    try:
        async with connect(lay.ws, mode, approval="auto", confine=True) as c:
            for tool, args in [
                ("ReadFile", {"path": "s.sock"}),
                ("ReadMediaFile", {"path": "s.sock"}),
                ("WriteFile", {"path": "s.sock", "content": "x"}),
                ("StrReplaceFile", {"path": "s.sock", "edit": {"old": "a", "new": "b"}}),
                ("Grep", {"pattern": "x", "path": "s.sock"}),
                ("Glob", {"pattern": "*", "directory": str(lay.ws / "s.sock")}),
            ]:
                r = await call(c, tool, **args)
                assert r.is_error, tool
                assert "is not a file" in result_payload(r) or "not a directory" in result_payload(r), tool
    finally:
        sock.close()
    assert (lay.ws / "s.sock").is_socket()
