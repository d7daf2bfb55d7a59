"""fsio/grantstore.py (SPEC §11): the grant key, made once per state directory (owner-only,
exclusive, the first of racing processes wins, never read half written), refused when others
could read it; and the record of grants `filegate rules` lists."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import pytest

from filegate.fsio import grantstore
from filegate.fsio.grantstore import (
    KEY_BYTES,
    GrantRecord,
    GrantStoreError,
    grant_key,
    grants_dir,
    live_grants,
    record_grant,
)

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
