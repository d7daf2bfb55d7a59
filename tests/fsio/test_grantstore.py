"""fsio/grantstore.py (SPEC §11): the grant key, made once per state directory (owner-only,
exclusive, the first of racing processes wins, never read half written), refused when others
could read it; and the record of grants `filegate rules` lists."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import pytest

from filegate.fsio import grantstore
from filegate.fsio.grantstore import (
    KEY_BYTES,
    GrantRecord,
    GrantStoreError,
    grant_key,
    grants_dir,
    listing,
    live_grants,
    record_grant,
)
from tests.tooling import needs

pytestmark = pytest.mark.skipif(os.name == "nt", reason="POSIX modes and processes")


def test_the_key_is_made_once_owner_only_and_read_back() -> None:
    root = grants_dir()
    key = grant_key()
    assert len(key) == KEY_BYTES and grant_key() == key
    assert stat.S_IMODE(os.stat(root / "key").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    assert sorted(p.name for p in root.iterdir()) == ["key"]  # no temp left behind


RACE = """
import sys
from filegate.fsio.grantstore import grant_key
print(grant_key().hex())
"""


def test_racing_processes_all_get_the_first_key() -> None:
    root = grants_dir()  # the test's own XDG_STATE_HOME, which the processes inherit
    procs = [
        subprocess.Popen([sys.executable, "-c", RACE], stdout=subprocess.PIPE, text=True) for _ in range(6)
    ]
    keys = {p.communicate(timeout=120)[0].strip() for p in procs}
    assert all(p.returncode == 0 for p in procs)
    assert len(keys) == 1 and keys == {grant_key().hex()}
    assert sorted(p.name for p in root.iterdir()) == ["key"]


@pytest.mark.parametrize(
    "spoil",
    [
        lambda p: os.chmod(p, 0o644),  # others could read it: they could forge grants
        lambda p: p.write_bytes(b"short"),
        lambda p: (p.unlink(), p.symlink_to(p.with_name("elsewhere"))),
        lambda p: (p.unlink(), p.mkdir()),
    ],
)
def test_a_key_file_others_could_read_or_that_is_not_one_is_refused(spoil: object) -> None:
    root = grants_dir()
    grant_key()
    (root / "elsewhere").write_bytes(b"k" * KEY_BYTES)
    os.chmod(root / "elsewhere", 0o600)
    spoil(root / "key")  # type: ignore[operator]
    with pytest.raises(GrantStoreError, match="key"):
        grant_key()


def record(ident: str, expires: float | None, pid: int | None = None) -> GrantRecord:
    return GrantRecord(ident, time.time(), "folder", "src/", "/w", "c", "handle", expires, pid or os.getpid())


def test_live_grants_are_those_not_expired_whose_holder_still_runs() -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = int(gone.stdout)
    record_grant(record("g-00000001", time.time() + 600))
    record_grant(record("g-00000002", time.time() - 1))
    record_grant(record("g-00000003", None))  # this process's session
    record_grant(record("g-00000004", None, dead))  # a session whose process ended
    assert [r.id for r in live_grants()] == ["g-00000001", "g-00000003"]
    assert stat.S_IMODE(os.stat(grants_dir() / "grants.jsonl").st_mode) == 0o600


def test_the_record_is_compacted_past_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(grantstore, "MAX_RECORD_BYTES", 8192)
    record_grant(record("g-ffffffff", time.time() + 600))
    log = grants_dir() / "grants.jsonl"
    i = 0
    while os.stat(log).st_size + 1000 < grantstore.MAX_RECORD_BYTES:
        record_grant(record(f"g-{i:08x}", time.time() - 1))  # expired
        i += 1
    for _ in range(10):  # past the bound: compacted to the one still live, then appended to
        record_grant(record(f"g-{i:08x}", time.time() - 1))
    assert os.stat(log).st_size < 2000
    assert [r.id for r in live_grants()] == ["g-ffffffff"]


# --- issue 55: what the mutation run showed untested ---------------------------------------------


def test_a_key_file_another_user_owns_is_refused_even_owner_only() -> None:
    """Whoever owns the key can forge grants: only this user's own key is used."""
    if os.geteuid() != 0:
        needs("root", "giving a file to another owner needs root")
    grant_key()
    os.chown(grants_dir() / "key", 1, 1)
    with pytest.raises(GrantStoreError) as refused:
        grant_key()
    path = grants_dir() / "key"
    assert str(refused.value) == (
        f"{path} is not an owner-only file of this user of 32 bytes; remove it to make a new key "
        "(grants sealed with the old one then stop working)"
    )


def test_a_process_that_loses_the_race_to_make_the_key_takes_the_winners() -> None:
    """Staged in process: another process links its key between our look and our link (the
    racing test above runs real processes, which test the installed code, not this one)."""
    winner = b"w" * KEY_BYTES
    real_link = os.link

    def link_after_the_winner(src: object, dst: object, **kw: object) -> None:
        staged = grants_dir() / "key.winner"
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, winner)
        os.close(fd)
        real_link(staged, dst)
        os.unlink(staged)
        real_link(src, dst, **kw)  # type: ignore[arg-type]  # FileExistsError, as in the race

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "link", link_after_the_winner)
        assert grant_key() == winner
    assert grant_key() == winner
    assert sorted(p.name for p in grants_dir().iterdir()) == ["key"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="the spy names a synced file by /proc")
def test_the_key_and_the_folder_naming_it_are_on_disk_before_it_is_used() -> None:
    """A handle sealed with a key a power loss then takes away would stop working: the key's
    bytes and the folder entry naming it are fsynced before grant_key returns it."""
    synced: list[tuple[str, bytes]] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        held = b""
        if stat.S_ISREG(os.fstat(fd).st_mode):
            with open(f"/proc/self/fd/{fd}", "rb") as f:
                held = f.read()
        synced.append((path, held))
        real_fsync(fd)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "fsync", spy)
        key = grant_key()
    assert any(held == key for _, held in synced), synced
    assert (str(grants_dir()), b"") in synced, synced


def test_a_state_directory_where_the_grants_cannot_go_is_said_naming_the_file() -> None:
    grants_dir().parent.mkdir(parents=True, exist_ok=True)
    grants_dir().write_text("not a folder")
    with pytest.raises(GrantStoreError) as refused:
        grant_key()
    assert str(refused.value).startswith(f"{grants_dir() / 'key'}: "), str(refused.value)
    assert "Errno" not in str(refused.value)  # the reason in words, once


def test_a_grant_expires_at_its_expiry_and_the_listing_is_as_of_the_time_given() -> None:
    given = time.time()
    record_grant(record("g-00000001", given + 600))
    assert [r.id for r in live_grants(given + 599)] == ["g-00000001"]
    assert live_grants(given + 600) == []
    assert listing("/w", given + 600) == "  (none)"


WHEN = 1_900_000_000.0  # 2030-03-17 17:46:40 UTC


def test_filegate_rules_lists_each_grant_with_its_time_left_and_client() -> None:
    def given(ident: str, workspace: str, expires: float | None, client: str = "c") -> None:
        record_grant(
            GrantRecord(ident, WHEN, "folder", "src/", workspace, client, "handle", expires, os.getpid())
        )

    given("g-00000001", "/other", WHEN + 7200)  # another workspace's, recorded first
    given("g-00000002", "/w", WHEN + 7200)
    given("g-00000003", "/w", WHEN + 30, client="")
    given("g-00000004", "/w", WHEN + 60)
    assert listing("/w", WHEN).split("\n") == [
        "  g-00000002  edits under `src/`  handle, 120 minutes left (until 19:46 UTC); client: c",
        "  g-00000003  edits under `src/`  handle, 1 minute left (until 17:47 UTC); client: -",
        "  g-00000004  edits under `src/`  handle, 1 minute left (until 17:47 UTC); client: c",
    ]
    assert listing("/w", WHEN + 6000) == (
        "  g-00000002  edits under `src/`  handle, 20 minutes left (until 19:46 UTC); client: c"
    )


def test_a_session_grant_of_another_running_process_is_listed_and_that_process_left_alone() -> None:
    """A replica's session grant holds while the replica runs; looking must not signal it."""
    # SIGHUP as it is by default (a run under nohup would hide a hang-up sent by mistake)
    sleep = "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_DFL); time.sleep(60)"
    other = subprocess.Popen([sys.executable, "-c", sleep])
    try:
        record_grant(record("g-00000001", None, other.pid))
        assert [r.id for r in live_grants()] == ["g-00000001"]
        time.sleep(0.2)
        assert other.poll() is None, "the process holding the grant was signalled"
    finally:
        other.kill()
        other.wait()
    assert live_grants() == []


def test_a_grants_end_is_appended_never_written_over_the_record_and_needs_no_record() -> None:
    from filegate.fsio.grantstore import record_end

    record_end("g-00000009")  # nothing recorded yet: nothing to do, no file made
    assert not (grants_dir() / "grants.jsonl").exists()
    record_grant(record("g-00000001", time.time() + 600))
    record_grant(record("g-00000002", None))
    record_end("g-00000002")
    assert [r.id for r in live_grants()] == ["g-00000001"]


def test_the_record_is_never_read_or_written_through_a_link() -> None:
    """grants.jsonl replaced by a link: a grant is not written into the file it points at, nor
    are grants planted there listed."""
    from filegate.fsio.grantstore import record_end

    record_grant(record("g-00000001", time.time() + 600))
    log = grants_dir() / "grants.jsonl"
    elsewhere = grants_dir().parent / "elsewhere.jsonl"
    elsewhere.write_bytes(log.read_bytes())
    log.unlink()
    log.symlink_to(elsewhere)
    before = elsewhere.read_bytes()
    with pytest.raises(OSError):
        record_grant(record("g-00000002", time.time() + 600))
    record_end("g-00000001")
    assert elsewhere.read_bytes() == before
    assert live_grants() == []


def test_a_damaged_line_in_the_record_is_skipped_and_the_rest_listed() -> None:
    record_grant(record("g-00000001", time.time() + 600))
    with open(grants_dir() / "grants.jsonl", "ab") as f:
        f.write(b'\xff\xfe not json \x00\n{"id": 1}\n[]\n')
    record_grant(record("g-00000002", time.time() + 600))
    assert [r.id for r in live_grants()] == ["g-00000001", "g-00000002"]


def test_compaction_keeps_every_live_grant_owner_only_and_the_record_within_its_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(grantstore, "MAX_RECORD_BYTES", 4096)
    log = grants_dir() / "grants.jsonl"
    live = [f"g-f000000{i}" for i in range(3)]
    for ident in live:
        record_grant(record(ident, time.time() + 600))
    for i in range(60):
        record_grant(record(f"g-{i:08x}", time.time() - 1))
        assert os.stat(log).st_size <= grantstore.MAX_RECORD_BYTES
    assert [r.id for r in live_grants()] == live
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600


def unblocked(fifo: Path, action: Callable[[], object]) -> object:
    """``action()``'s value or exception, run in a thread: if it is still waiting on ``fifo``
    after 10 s, the FIFO's other end is opened to let it go, and the test fails."""
    done: list[object] = []

    def run() -> None:
        try:
            done.append(action())
        except Exception as exc:  # the value the test looks at
            done.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(10)
    if worker.is_alive():
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # the other end: the open waiting returns
        worker.join()
        os.close(fd)
        pytest.fail(f"waited on the FIFO {fifo}")
    return done[0]


def test_a_fifo_planted_as_the_key_or_the_record_never_makes_a_grant_wait() -> None:
    """The server makes and records grants on its worker threads, `filegate rules` reads the
    record: a FIFO in their place is refused or read as empty, never waited on."""
    from filegate.fsio.grantstore import record_end

    grant_key()
    key, log = grants_dir() / "key", grants_dir() / "grants.jsonl"
    key.unlink()
    os.mkfifo(key, 0o600)
    refused = unblocked(key, grant_key)
    assert isinstance(refused, GrantStoreError) and "remove it to make a new key" in str(refused)
    os.mkfifo(log, 0o600)
    assert unblocked(log, lambda: listing("/w")) == "  (none)"
    assert isinstance(unblocked(log, lambda: record_grant(record("g-00000001", None))), OSError)
    assert unblocked(log, lambda: record_end("g-00000001")) is None


def test_a_session_grant_of_another_users_process_is_listed_while_it_runs() -> None:
    """kill(pid, 0) is refused (EPERM) for another user's process: it runs, so its grant holds.
    Process 1 is root's; as root the check runs in a child that has become another user."""
    held = GrantRecord("g-00000001", time.time(), "folder", "src/", "/w", "c", "stdio session", None, 1)
    if os.geteuid() != 0:
        assert held.live(time.time())
        return
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's answer is its exit status
        try:
            os.setgid(65534)
            os.setuid(65534)
            os._exit(0 if held.live(time.time()) else 1)
        finally:
            os._exit(2)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# --- issue 55, the second pass: what the recorded survivors left untested --------------------------


def test_a_workspace_whose_name_is_not_utf8_records_and_lists_its_grants() -> None:
    """A Linux folder name may hold any byte: Python names it with a lone surrogate, which the
    record carries escaped (ASCII), so the grant is recorded and `filegate rules` lists it."""
    workdir = "/w/caf\udce9"  # os.fsdecode(b"/w/caf\xe9")
    record_grant(GrantRecord("g-00000001", WHEN, "file", "é.txt", workdir, "clïent", "handle", WHEN + 60, 1))
    raw = (grants_dir() / "grants.jsonl").read_bytes()
    assert raw.isascii()
    assert [(r.id, r.workspace, r.target, r.client) for r in live_grants(WHEN)] == [
        ("g-00000001", workdir, "é.txt", "clïent")
    ]
    assert "g-00000001" in listing(workdir, WHEN)


def test_the_record_is_read_only_up_to_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """A record grown past four times its bound (planted, or written by something else) is read
    that far and no further: what lies beyond is not listed, and nothing reads it all at once."""
    monkeypatch.setattr(grantstore, "MAX_RECORD_BYTES", 1024)
    log = grants_dir() / "grants.jsonl"
    record_grant(record("g-00000001", time.time() + 600))
    with open(log, "ab") as f:
        f.write(b"x" * (4 * 1024 - log.stat().st_size - 1) + b"\n")  # the bound, exactly
    beyond = record("g-00000002", time.time() + 600)
    with open(log, "ab") as f:  # past the bound: a grant's line as record_grant writes it
        f.write(json.dumps(asdict(beyond)).encode() + b"\n")
    assert log.stat().st_size > 4 * 1024
    assert [r.id for r in live_grants()] == ["g-00000001"]


def test_the_record_is_compacted_only_once_a_line_would_take_it_past_its_bound() -> None:
    def fixed(ident: str) -> GrantRecord:  # every line the same length
        return GrantRecord(ident, WHEN, "folder", "src/", "/w", "c", "handle", WHEN + 600, 1)

    log = grants_dir() / "grants.jsonl"
    record_grant(fixed("g-00000001"))
    line = log.stat().st_size  # one record's line, as written
    bound = grantstore.MAX_RECORD_BYTES
    log.write_bytes(b"x" * (bound - line - 1) + b"\n")  # a damaged line: compaction drops it
    record_grant(fixed("g-00000002"))  # reaches the bound exactly: appended
    assert log.stat().st_size == bound
    record_grant(fixed("g-00000003"))  # past it: compacted first
    assert log.stat().st_size == 2 * line
    assert [r.id for r in live_grants()] == ["g-00000002", "g-00000003"]


@pytest.mark.parametrize("made", ["key", "compaction"])
def test_a_link_planted_at_a_temp_files_name_is_never_written_through(
    made: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key and the compacted record are written to a temp file first, made exclusively: a link
    waiting at its name (here the name is made predictable, a mock, to plant one) is refused,
    never followed to write the key's bytes or the record into the file it points at."""
    monkeypatch.setattr(grantstore.secrets, "token_hex", lambda n=None: "feedf00d")
    root = grants_dir()
    root.mkdir(parents=True, mode=0o700, exist_ok=True)
    victim = root.parent / "victim"
    victim.write_bytes(b"precious\n")
    if made == "key":
        (root / f"key.{os.getpid()}.feedf00d.tmp").symlink_to(victim)
        with pytest.raises(GrantStoreError):
            grant_key()
        assert not (root / "key").exists()
    else:
        monkeypatch.setattr(grantstore, "MAX_RECORD_BYTES", 512)
        (root / "grants.feedf00d.tmp").symlink_to(victim)
        record_grant(record("g-00000001", time.time() + 600))
        (root / "grants.jsonl").write_bytes(b"x" * 600 + b"\n")
        with pytest.raises(FileExistsError):
            record_grant(record("g-00000002", time.time() + 600))
    assert victim.read_bytes() == b"precious\n"
