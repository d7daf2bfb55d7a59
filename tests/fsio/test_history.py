"""The write history store (fsio/history.py, SPEC §8.4) on real files in a temp state directory:
what a line holds, where a pre-image goes, who may read it, ids, bounds, several processes."""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import itertools
import json
import logging
import os
import shutil
import stat
import time
import types
from pathlib import Path
from typing import Any

import pytest

from filegate.errors import WriteError
from filegate.fsio import history as store
from filegate.fsio import historylog, preimages
from filegate.fsio.atomic import replace_file
from filegate.fsio.history import Entry, Limits, SetFile, WriteHistory, history_dir
from filegate.fsio.snapshot import Snapshot, read_all
from filegate.fsio.spliced import Spliced, content_hash
from filegate.policy.workspace import ResolvedPath
from tests.tooling import needs


def sha(data: bytes) -> str:
    """A content's address in the history (BLAKE3 since issue 56)."""
    return content_hash(data, "blake3")


@pytest.fixture
def target(tmp_path: Path) -> Path:
    path = tmp_path / "ws" / "a.txt"
    path.parent.mkdir()
    path.write_bytes(b"old\n")
    path.chmod(0o640)
    return path


def rp(path: Path, sensitive: bool = False) -> ResolvedPath:
    return ResolvedPath(shown=path.name, real=path, inside=True, sensitive=sensitive)


def lines(h: WriteHistory) -> list[dict[str, Any]]:
    return [json.loads(line) for line in h.log_path.read_text().splitlines()]


def write(h: WriteHistory, path: Path, new: bytes, ok: bool = True, **kw: Any) -> str:
    """One write as tools/edit/writing.py makes it: begin, the file replaced, finish."""
    old = path.read_bytes() if path.exists() else None
    write_id = h.begin(
        kw.get("tool", "WriteFile"), rp(path, kw.get("sensitive", False)), "cli", "auto", old, new
    )
    if ok:
        path.write_bytes(new)
    h.finish(write_id, ok)
    return write_id


def test_a_write_keeps_its_pre_image_and_one_record_then_its_outcome(target: Path) -> None:
    h = WriteHistory()
    write_id = write(h, target, b"new content\n")
    record, outcome = lines(h)
    assert list(record) == [
        "id",
        "time",
        "kept",
        "before",
        "size_before",
        "client",
        "tool",
        "path",
        "route",
        "after",
        "size_after",
        "mode",
        "hash",
    ]  # fmt: skip: the index's fields first (fsio/historylog.py)
    assert record["hash"] == "blake3"
    assert record["id"] == write_id and len(write_id) == 18 and write_id.startswith("w-")
    assert (record["client"], record["tool"], record["path"], record["route"]) == (
        "cli",
        "WriteFile",
        str(target),
        "auto",
    )
    assert (record["before"], record["after"]) == (sha(b"old\n"), sha(b"new content\n"))
    assert (record["size_before"], record["size_after"], record["mode"]) == (4, 12, 0o640)
    assert record["kept"] is True
    assert outcome == {"id": write_id, "outcome": "done"}
    blob = history_dir() / "objects" / sha(b"old\n")[:2] / sha(b"old\n")[2:]
    assert blob.read_bytes() == b"old\n"
    (entry,) = h.entries()
    assert entry.state == "done" and h.pre_image(entry) == b"old\n"
    assert h.find(write_id) == entry and h.find("w-nothere") is None


def test_the_outcome_of_a_write_that_failed_and_of_one_never_finished(target: Path) -> None:
    h = WriteHistory()
    failed = write(h, target, b"x", ok=False)
    started = h.begin("WriteFile", rp(target), "cli", "auto", b"old\n", b"y")
    h.finish("", ok=True)  # no id (history off): nothing
    states = {e.id: e.state for e in WriteHistory().entries()}  # as another process reads it
    assert states == {failed: "failed", started: "unconfirmed"}
    assert lines(h)[1] == {"id": failed, "outcome": "failed"}


def test_everything_is_owner_only_whatever_the_umask(target: Path) -> None:
    old = os.umask(0)
    try:
        history_dir().mkdir(parents=True, mode=0o755)
        os.chmod(history_dir(), 0o755)  # made by someone else, too open: narrowed
        h = WriteHistory(limits=Limits(max_bytes=5))
        write(h, target, b"new\n")
        assert stat.S_IMODE(h.log_path.stat().st_mode) == 0o600  # as appended to
        write(h, target, b"newer\n")  # evicts the first: a tombstone appended
        assert [r for r in lines(h) if "evicted" in r]
        h.log.compact(time.time(), 1e9)  # and a compaction's new file
        assert stat.S_IMODE(h.log_path.stat().st_mode) == 0o600
    finally:
        os.umask(old)
    for root, dirs, files in os.walk(history_dir()):
        for name in dirs:
            assert stat.S_IMODE(os.stat(Path(root) / name).st_mode) == 0o700, name
        for name in files:
            assert stat.S_IMODE(os.stat(Path(root) / name).st_mode) == 0o600, name
    assert stat.S_IMODE(os.stat(history_dir()).st_mode) == 0o700


def test_each_folder_the_history_makes_is_made_durable_in_its_parent(
    target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A spy on the directory fsyncs (each goes through): the first write makes the state
    folders, objects/ and the pre-image's objects/ab/; each new name is synced in its parent."""
    synced: list[Path] = []
    real = preimages.fsync_dir
    spy = lambda path: (synced.append(Path(path)), real(path))[1]  # noqa: E731
    monkeypatch.setattr(preimages, "fsync_dir", spy)
    monkeypatch.setattr(store, "fsync_dir", spy)
    h = WriteHistory()
    old = target.read_bytes()
    write(h, target, b"new\n")
    made = [history_dir(), history_dir() / "objects", h.object_path(sha(old)).parent]
    assert all(folder.parent in synced for folder in made), (made, synced)
    synced.clear()
    write(h, target, b"newer\n")  # its pre-image's folder may be new, nothing else is
    assert history_dir().parent not in synced and history_dir() not in synced


def test_a_history_directory_that_is_a_symlink_stops_the_write(target: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    history_dir().parent.mkdir(parents=True, exist_ok=True)
    history_dir().symlink_to(elsewhere)
    with pytest.raises(WriteError) as caught:
        WriteHistory().begin("WriteFile", rp(target), "cli", "auto", b"old\n", b"new")
    assert caught.value.message == (
        f"Failed to keep the previous content of `a.txt` in the write history at {history_dir()} "
        f"({history_dir()} is not a directory of this user). Nothing was written. `--history off` turns the history off."
    )
    assert list(elsewhere.iterdir()) == []


def test_a_history_the_system_refuses_to_extend_stops_the_write_with_its_reason(target: Path) -> None:
    history_dir().mkdir(parents=True)
    (history_dir() / "history.jsonl").mkdir()  # where the file goes: EISDIR
    with pytest.raises(WriteError) as caught:
        WriteHistory().begin("WriteFile", rp(target), "cli", "auto", b"old\n", b"new")
    assert caught.value.message == (
        f"Failed to keep the previous content of `a.txt` in the write history at {history_dir()} "
        "(it is a directory). Nothing was written. `--history off` turns the history off."
    )


def test_an_unwritable_state_directory_stops_the_write_with_the_reason(target: Path) -> None:
    if os.geteuid() == 0:
        history_dir().parent.mkdir(parents=True, exist_ok=True)
        history_dir().write_text("a file where the directory goes")
    else:
        history_dir().mkdir(parents=True)
        history_dir().chmod(0o500)
    with pytest.raises(WriteError) as caught:
        WriteHistory().begin("WriteFile", rp(target), "cli", "auto", b"old\n", b"new")
    assert caught.value.brief == "History failed"
    assert f"in the write history at {history_dir()} (" in caught.value.message


def test_a_sensitive_write_keeps_no_copy_hash_size_or_mode(target: Path) -> None:
    h = WriteHistory()
    write(h, target, b"TOKEN=secret\n", sensitive=True)
    record = lines(h)[0]
    assert record["kept"] is False and record["not_kept"] == "sensitive file"
    assert not {"before", "after", "size_before", "size_after", "mode", "hash"} & set(record)
    assert not (history_dir() / "objects").exists()
    (entry,) = h.entries()
    assert entry.before == entry.after == "" and entry.size_before is None


def test_a_creation_and_a_removal_say_so(tmp_path: Path) -> None:
    path = tmp_path / "new.txt"
    h = WriteHistory()
    made = write(h, path, b"made\n")
    gone = h.begin("UndoWrite", rp(path), "cli", "auto", b"made\n", None)
    created, removed = (e for e in h.entries() if e.id in (made, gone))
    assert created.created and not created.removed and created.before == "" and created.mode is None
    assert created.after == sha(b"made\n") and created.size_after == 5
    assert removed.removed and not removed.created and removed.after == "" and removed.size_after is None
    assert h.pre_image(removed) == b"made\n"
    assert "created" not in lines(h)[2] and lines(h)[2]["removed"] is True


def test_identical_pre_images_are_kept_once(target: Path) -> None:
    h = WriteHistory()
    write(h, target, b"new\n")
    target.write_bytes(b"old\n")
    write(h, target, b"newer\n")
    objects = [f for _, _, files in os.walk(history_dir() / "objects") for f in files]
    assert objects == [sha(b"old\n")[2:]]
    assert h.kept_bytes() == 4


def test_a_spliced_new_content_is_hashed_as_its_bytes(target: Path) -> None:
    base = b"0123456789"
    spliced = Spliced(base, 2, 4, b"AB")
    h = WriteHistory()
    h.begin("StrReplaceFile", rp(target), "cli", "auto", b"old\n", spliced)
    assert h.entries()[0].after == sha(bytes(spliced))
    assert h.entries()[0].size_after == len(bytes(spliced))


def test_a_pre_image_over_the_byte_bound_is_not_kept_and_says_why(target: Path) -> None:
    h = WriteHistory(limits=Limits(max_bytes=3))
    write(h, target, b"new\n")
    (entry,) = h.entries()
    assert not entry.kept and entry.not_kept == "larger than --history-max-bytes"
    assert entry.before == sha(b"old\n")  # not sensitive: its hashes are told
    assert not (history_dir() / "objects").exists()
    assert h.kept_bytes() == 0
    assert lines(h)[0]["kept"] is False


def test_a_pre_image_of_exactly_the_byte_bound_is_kept(target: Path) -> None:
    h = WriteHistory(limits=Limits(max_bytes=4))
    write(h, target, b"new\n")
    assert h.entries()[0].kept and h.pre_image(h.entries()[0]) == b"old\n"


def test_the_history_lives_in_the_state_directory_unless_told(tmp_path: Path) -> None:
    assert history_dir() == Path(os.environ["XDG_STATE_HOME"]) / "filegate" / "history"
    elsewhere = tmp_path / "elsewhere"
    target = tmp_path / "t.txt"
    target.write_bytes(b"x")
    write(WriteHistory(elsewhere), target, b"y")
    assert (elsewhere / "history.jsonl").is_file() and not history_dir().exists()


def test_a_damaged_copy_is_not_restored(target: Path) -> None:
    h = WriteHistory()
    write(h, target, b"new\n")
    (entry,) = h.entries()
    h.object_path(entry.before).write_bytes(b"olx\n")
    with pytest.raises(ValueError, match="damaged"):
        h.pre_image(entry)


# --- ids --------------------------------------------------------------------------------------


def test_ids_are_unique_across_processes_sharing_the_directory(
    target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two stores on one directory (two processes): the second's view is stale when it draws,
    and its first draw is the id the first just took; it looks again under the lock."""
    a, b = WriteHistory(), WriteHistory()
    b.entries()  # b has looked once, before a wrote
    draws = iter(["aaaaaa", "aaaaaa", "bbbbbb"])
    monkeypatch.setattr(store, "draw_id", lambda: next(draws))
    first = a.begin("WriteFile", rp(target), "a", "auto", b"old\n", b"1")
    second = b.begin("WriteFile", rp(target), "b", "auto", b"old\n", b"2")
    assert (first, second) == ("w-aaaaaa", "w-bbbbbb")
    assert [e.id for e in WriteHistory().entries()] == ["w-aaaaaa", "w-bbbbbb"]


def test_an_evicted_id_is_never_drawn_again(target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    h = WriteHistory(limits=Limits(max_age_s=10))
    draws = iter(["aaaaaa", "bbbbbb", "aaaaaa", "cccccc"])
    monkeypatch.setattr(store, "draw_id", lambda: next(draws))
    write(h, target, b"a")
    clock[0] += 11
    write(h, target, b"b")  # w-aaaaaa is evicted: its tombstone stays
    assert h.evicted("w-aaaaaa") and not h.evicted("w-bbbbbb")
    assert write(h, target, b"c") == "w-cccccc"


def test_a_full_id_space_stops_the_write(target: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    h = WriteHistory()
    monkeypatch.setattr(store, "draw_id", lambda: "aaaaaa")
    write(h, target, b"a")
    with pytest.raises(WriteError, match=r"\(no free write id \(the history is full\)\)"):
        write(h, target, b"b")


# --- bounds -----------------------------------------------------------------------------------


def _files(tmp_path: Path, n: int, size: int) -> list[Path]:
    paths = []
    for k in range(n):
        p = tmp_path / f"f{k}"
        p.write_bytes(bytes([65 + k]) * size)
        paths.append(p)
    return paths


def test_the_byte_bound_evicts_oldest_first_down_to_nine_tenths(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = WriteHistory(limits=Limits(max_bytes=100))
    paths = _files(tmp_path, 5, 30)
    ids = [write(h, p, b"x") for p in paths[:3]]  # 90 bytes kept
    assert h.kept_bytes() == 90 and not caplog.records
    ids.append(write(h, paths[3], b"x"))  # 30 more: 120 > 100 -> the oldest go, down to <= 70
    assert [e.id for e in h.entries()] == ids[1:]
    assert h.kept_bytes() == 90 and h.evicted(ids[0])
    assert not h.object_path(sha(b"A" * 30)).exists()
    assert [r.getMessage() for r in caplog.records] == [
        "history: evicted 1 write(s), oldest first (over --history-max-bytes)"
    ]
    assert [e.id for e in WriteHistory().entries()] == ids[1:]  # rewritten on disk too


def test_a_pre_image_another_write_still_names_is_kept(tmp_path: Path) -> None:
    h = WriteHistory(limits=Limits(max_bytes=70))
    a, b, c = _files(tmp_path, 3, 30)
    b.write_bytes(a.read_bytes())  # same pre-image as a's
    first = write(h, a, b"x")
    second = write(h, b, b"y")
    assert h.kept_bytes() == 30
    third = write(h, c, b"z")  # 60: fits
    fourth = write(h, a, b"w")  # a holds "x" now: one byte more, fits
    assert [e.id for e in h.entries()] == [first, second, third, fourth]
    assert h.kept_bytes() == 61


def test_the_age_bound_evicts_old_writes_and_says_so(
    target: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = [5000.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    h = WriteHistory(limits=Limits(max_age_s=100))
    old = write(h, target, b"one\n")
    clock[0] += 100  # exactly the age: kept
    kept = write(h, target, b"two\n")
    assert [e.id for e in h.entries()] == [old, kept]
    clock[0] += 0.5  # past it
    newest = write(h, target, b"three\n")
    assert [e.id for e in h.entries()] == [kept, newest]
    assert "history: evicted 1 write(s), oldest first (older than --history-max-age)" in caplog.text
    assert not h.object_path(sha(b"old\n")).exists()
    assert {"id": old, "evicted": 5100.5} in lines(h)


def test_tombstones_go_at_the_first_compaction_after_ten_times_the_age_bound(
    target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [0.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    h = WriteHistory(limits=Limits(max_age_s=10))
    first = write(h, target, b"1")
    clock[0] = 11
    write(h, target, b"2")  # evicts the first: a tombstone, then (due) a compaction keeps it
    assert h.evicted(first) and tombstones(h) == [first]
    clock[0] = 11 + 100  # exactly ten times: a compaction still keeps it
    h.log.compact(clock[0], 100)
    assert h.evicted(first) and tombstones(WriteHistory()) == [first]
    clock[0] = 11 + 100.5
    h.log.compact(clock[0], 100)
    assert not h.evicted(first) and not WriteHistory().evicted(first)
    assert not [r for r in lines(h) if r.get("id") == first]


def test_the_defaults_are_one_gibibyte_and_fourteen_days() -> None:
    assert Limits() == Limits(1 << 30, 14 * 86400.0)


# --- reading what other processes wrote ------------------------------------------------------


def test_a_reader_sees_appends_evictions_and_compactions_by_other_processes(tmp_path: Path) -> None:
    reader = WriteHistory()
    assert reader.entries() == []
    writer = WriteHistory(limits=Limits(max_bytes=40))
    files = _files(tmp_path, 6, 30)
    first = write(writer, files[0], b"x")
    assert [e.id for e in reader.entries()] == [first]
    ino = writer.log_path.stat().st_ino
    second = write(writer, files[1], b"y")  # evicts the first: a tombstone appended
    assert [e.id for e in reader.entries()] == [second] and reader.evicted(first)
    assert reader.kept_bytes() == 30 and writer.log_path.stat().st_ino == ino
    ids = [first, second]
    while writer.log_path.stat().st_ino == ino:  # each write evicts one: a compaction comes
        ids.append(write(writer, files[len(ids)], b"z"))
    assert len(ids) == 4  # its lines: 4 records, 4 outcomes, 3 tombstones; 3 live, 3 + 1 + 1 dead
    assert [e.id for e in reader.entries()] == ids[-1:] and all(reader.evicted(i) for i in ids[:-1])
    assert reader.kept_bytes() == 30 and reader.find(ids[-1]) == writer.find(ids[-1])


def test_a_half_written_last_line_waits_and_a_damaged_line_is_skipped(
    target: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = WriteHistory()
    first = write(h, target, b"new\n")
    with open(h.log_path, "ab") as f:
        f.write(b"{not json}\n")
        f.write(
            b'{"id":"w-123456","time":1,"client":"","tool":"WriteFile","path":"/x","route":"auto","kept":false'
        )
    reader = WriteHistory()
    assert [e.id for e in reader.entries()] == [first]
    assert [r.getMessage() for r in caplog.records] == [f"history: skipped a damaged line in {h.log_path}"]
    with open(h.log_path, "ab") as f:
        f.write(b"}\n")
    assert [e.id for e in reader.entries()] == [first, "w-123456"]


def test_an_entry_line_round_trips(target: Path) -> None:
    entry = Entry("w-abcdef", 1.5, "c", "WriteFile", "/p", "auto", True, "b", "a", 1, 2, 0o600)
    assert Entry.parse(entry.line()) == entry
    empty = Entry("w-abcdef", 0.0, "", "WriteFile", "/p", "auto", True, "b", "a", 0, 0, 0)  # zeros kept
    assert Entry.parse(empty.line()) == empty
    assert Entry.parse({**entry.line(), "future_field": 1}) == entry


def test_no_history_directory_reads_as_empty(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    assert WriteHistory().entries() == [] and WriteHistory().find("w-000000") is None


def test_a_pre_image_already_kept_needs_no_room_and_nothing_is_evicted_at_the_bound(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = WriteHistory(limits=Limits(max_bytes=60))
    a, b, c = _files(tmp_path, 3, 30)
    c.write_bytes(a.read_bytes())  # c's pre-image is a's
    ids = [write(h, a, b"x"), write(h, b, b"y")]  # 60 bytes: exactly the bound
    ino = h.log_path.stat().st_ino
    ids.append(write(h, c, b"z"))  # kept already: no room needed, nothing evicted
    assert [e.id for e in h.entries()] == ids and h.kept_bytes() == 60
    assert not caplog.records
    assert h.log_path.stat().st_ino == ino  # appended to, not rewritten


def test_eviction_and_rewrites_keep_outcomes_and_odd_names(tmp_path: Path) -> None:
    h = WriteHistory(limits=Limits(max_bytes=100))
    odd = tmp_path / os.fsdecode(b"caf\xe9 \xff.txt")  # not UTF-8: a surrogate in the name
    odd.write_bytes(b"D" * 30)
    a, b, c, d = _files(tmp_path, 4, 30)
    first = write(h, a, b"x")
    failed = write(h, b, b"y", ok=False)
    unfinished = h.begin("WriteFile", rp(odd), "cli", "auto", odd.read_bytes(), b"w")
    assert tombstones(h) == []
    h.object_path(sha(b"A" * 30)).unlink()  # a copy gone already: its eviction goes on
    last = write(h, c, b"z")  # 120 > 100: the oldest goes, the file is rewritten
    assert h.log_path.read_bytes().isascii()
    fresh = WriteHistory()
    states = {e.id: e.state for e in fresh.entries()}
    assert states == {failed: "failed", unfinished: "unconfirmed", last: "done"}
    assert fresh.evicted(first)
    assert [e.path for e in fresh.entries() if e.id == unfinished] == [str(odd)]
    # A reader that knew the tombstone only from the file: its next write judges its age.
    reader = WriteHistory(limits=Limits(max_bytes=100))
    write(reader, d, b"again")
    assert reader.evicted(first)


def tombstones(h: WriteHistory) -> list[str]:
    """Tombstones so far (none before the first eviction)."""
    return [r["id"] for r in lines(h) if "evicted" in r]


def test_eviction_frees_down_to_nine_tenths_of_the_bound_not_just_enough(tmp_path: Path) -> None:
    h = WriteHistory(limits=Limits(max_bytes=100))
    sizes = [3, 30, 30, 35, 5]
    paths = []
    for k, size in enumerate(sizes):
        p = tmp_path / f"g{k}"
        p.write_bytes(bytes([97 + k]) * size)
        paths.append(p)
    ids = [write(h, p, b"x") for p in paths[:4]]  # 98 kept
    ids.append(write(h, paths[4], b"x"))  # 5 more: 103 > 100; freeing 3 would do, 90 % needs 33
    assert [e.id for e in h.entries()] == ids[2:]
    assert h.kept_bytes() == 70


def test_writes_evicted_for_age_make_room_before_any_is_evicted_for_bytes(
    target: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = [0.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    h = WriteHistory(limits=Limits(max_bytes=100, max_age_s=10))
    a, b, c = _files(tmp_path, 3, 40)
    old = write(h, a, b"x")
    clock[0] = 5
    kept = write(h, b, b"y")
    clock[0] = 12  # the first is too old now, and its 40 bytes make room for c's
    newest = write(h, c, b"z")
    assert [e.id for e in h.entries()] == [kept, newest] and h.evicted(old)
    assert [r.getMessage() for r in caplog.records] == [
        "history: evicted 1 write(s), oldest first (older than --history-max-age)"
    ]


def test_an_aged_write_freeing_nothing_leaves_a_history_at_exactly_its_byte_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The aged write's pre-image is a younger write's too: evicting it frees no byte, and the
    new pre-image then fills the bound exactly, which is within it (only age is said)."""
    clock = [0.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    h = WriteHistory(limits=Limits(max_bytes=100, max_age_s=10))
    a, b, c = _files(tmp_path, 3, 40)
    b.write_bytes(a.read_bytes())  # one pre-image of 40 bytes for both
    aged = write(h, a, b"x")
    clock[0] = 5
    shared = write(h, b, b"y")
    clock[0] = 12
    c.write_bytes(b"C" * 60)
    newest = write(h, c, b"z")  # 40 + 60 = 100: the bound exactly
    assert [e.id for e in h.entries()] == [shared, newest] and h.kept_bytes() == 100
    assert h.evicted(aged)
    assert [r.getMessage() for r in caplog.records] == [
        "history: evicted 1 write(s), oldest first (older than --history-max-age)"
    ]


def test_an_eviction_for_age_and_bytes_at_once_says_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = [0.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    h = WriteHistory(limits=Limits(max_bytes=100, max_age_s=10))
    a, b, c = _files(tmp_path, 3, 40)
    b.write_bytes(a.read_bytes())
    write(h, a, b"x")
    clock[0] = 5
    write(h, b, b"y")
    clock[0] = 12
    c.write_bytes(b"C" * 61)
    newest = write(h, c, b"z")  # 40 + 61 > 100, and the aged write frees nothing: the young one goes too
    assert [e.id for e in h.entries()] == [newest] and h.kept_bytes() == 61
    assert [r.getMessage() for r in caplog.records] == [
        "history: evicted 2 write(s), oldest first (older than --history-max-age, over --history-max-bytes)"
    ]


def test_an_eviction_whose_log_cannot_be_rewritten_evicts_nothing(target: Path, tmp_path: Path) -> None:
    """The rewritten log cannot be written whole (the file size limit here; a full disk alike):
    the write is refused and the history is as it was, for this process and the next — the
    write it would have evicted is still listed and its pre-image still kept, and no part of
    the rewritten log is left behind."""
    import resource

    h = WriteHistory(limits=Limits(max_bytes=100))
    a, b = _files(tmp_path, 2, 60)
    first = write(h, a, b"x")
    with open(h.log_path, "ab") as f:  # recent tombstones: the rewrite is longer than the limit below
        f.writelines(b'{"id":"w-%06x","evicted":%d}\n' % (k, time.time()) for k in range(300))
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, hard))
    try:
        with pytest.raises(WriteError, match="file size limit"):
            write(h, b, b"y")  # 60 + 60 > 100: the first would go
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    for reader in (h, WriteHistory()):
        assert [e.id for e in reader.entries()] == [first] and not reader.evicted(first)
        assert reader.pre_image(reader.entries()[0]) == b"A" * 60
    assert sorted(p.name for p in history_dir().iterdir()) == ["history.jsonl", "lock", "objects"]


# --- a pre-image kept as the replaced file's own inode ----------------------------------------


def blob_of(data: bytes) -> Path:
    return history_dir() / "objects" / sha(data)[:2] / sha(data)[2:]


def read_snapshot(path: Path) -> tuple[bytes, Snapshot]:
    fd = os.open(path, os.O_RDONLY)
    try:
        return read_all(fd, 1 << 30, path.name)
    finally:
        os.close(fd)


@pytest.fixture
def with_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    """The linked pre-image needs /proc (linkat of the open file): these tests give it back under
    FILEGATE_SIMULATE, whose no-proc fallback (a copy) the no-proc tests below check."""
    monkeypatch.delenv("FILEGATE_SIMULATE", raising=False)


def begin_read(h: WriteHistory, path: Path, new: bytes) -> tuple[str, Snapshot]:
    """begin() as tools/edit/writing.py calls it: with the snapshot the old bytes were read with."""
    old, snap = read_snapshot(path)
    return h.begin("WriteFile", rp(path), "cli", "auto", old, new, snap), snap


def test_a_pre_image_is_the_replaced_inode_itself_kept_before_the_rename_then_owner_only(
    target: Path, with_proc: None
) -> None:
    h = WriteHistory()
    write_id, snap = begin_read(h, target, b"new content\n")
    blob = blob_of(b"old\n")
    assert os.stat(blob).st_ino == snap.ino == os.stat(target).st_ino  # linked, not copied
    replace_file(target, b"new content\n", expect=snap, shown=target.name)
    h.finish(write_id, ok=True)
    st = os.stat(blob)
    assert (st.st_ino, st.st_nlink, stat.S_IMODE(st.st_mode)) == (snap.ino, 1, 0o600)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640 and target.read_bytes() == b"new content\n"
    assert h.pre_image(h.entries()[-1]) == b"old\n"


def test_a_file_with_another_name_is_copied_so_writes_through_that_name_leave_the_pre_image(
    target: Path,
) -> None:
    other = target.with_name("other-name.txt")
    os.link(target, other)
    h = WriteHistory()
    write_id, snap = begin_read(h, target, b"new content\n")
    assert os.stat(blob_of(b"old\n")).st_ino != snap.ino  # a copy from the start: a crash before
    replace_file(target, b"new content\n", expect=snap, shown=target.name)  # finish() keeps it so
    h.finish(write_id, ok=True)
    with open(other, "r+b") as f:  # the old inode, still named in the workspace
        f.write(b"OLD")
    assert os.stat(blob_of(b"old\n")).st_ino != snap.ino
    assert h.pre_image(h.entries()[-1]) == b"old\n"


def test_a_file_changed_in_place_since_it_was_read_is_not_linked(target: Path) -> None:
    """Same size, same inode, other bytes: the inode is not the pre-image, the bytes read are."""
    h = WriteHistory()
    old, snap = read_snapshot(target)
    with open(target, "r+b") as f:
        f.write(b"OLD")
    h.begin("WriteFile", rp(target), "cli", "auto", old, b"new\n", snap)
    assert os.stat(blob_of(b"old\n")).st_ino != snap.ino
    assert blob_of(b"old\n").read_bytes() == b"old\n"


@pytest.mark.parametrize("content", [b"old\n", b""], ids=["a file", "an empty file"])
def test_a_write_that_did_not_land_drops_its_linked_pre_image_and_leaves_the_file_alone(
    target: Path, with_proc: None, content: bytes
) -> None:
    target.write_bytes(content)
    h = WriteHistory()
    write_id, snap = begin_read(h, target, b"new content\n")
    assert os.stat(target).st_nlink == 2  # linked
    h.finish(write_id, ok=False)  # e.g. the stale check refused it: no rename
    assert not blob_of(content).exists()
    st = os.stat(target)
    assert (st.st_ino, st.st_nlink, stat.S_IMODE(st.st_mode)) == (snap.ino, 1, 0o640)
    assert target.read_bytes() == content


def test_a_linked_pre_image_named_elsewhere_by_its_rename_is_replaced_by_a_copy(
    target: Path, with_proc: None
) -> None:
    h = WriteHistory()
    write_id, snap = begin_read(h, target, b"new content\n")
    replace_file(target, b"new content\n", expect=snap, shown=target.name)
    extra = target.with_name("extra.txt")
    os.link(blob_of(b"old\n"), extra)  # a name appeared for the old inode before the outcome
    h.finish(write_id, ok=True)
    st = os.stat(blob_of(b"old\n"))
    assert st.st_ino != snap.ino and (st.st_nlink, stat.S_IMODE(st.st_mode)) == (1, 0o600)
    extra.write_bytes(b"changed through the other name\n")
    assert h.pre_image(h.entries()[-1]) == b"old\n"


def test_a_link_left_by_a_crash_is_not_taken_for_a_kept_pre_image(target: Path, with_proc: None) -> None:
    """Killed between begin and the rename: the history's name still shares the workspace's
    inode. A later write of the same content keeps a pre-image of its own (a copy: the file
    now has two names), which a write in place to the file no longer changes."""
    begin_read(WriteHistory(), target, b"new content\n")  # no rename, no outcome: a crash
    assert os.stat(target).st_nlink == 2
    h = WriteHistory()
    write_id, snap = begin_read(h, target, b"new content\n")
    replace_file(target, b"new content\n", expect=snap, shown=target.name)
    h.finish(write_id, ok=True)
    assert os.stat(blob_of(b"old\n")).st_ino != snap.ino
    assert h.pre_image(h.find(write_id)) == b"old\n"  # type: ignore[arg-type]


def test_a_state_directory_on_another_file_system_gets_a_copy(
    target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(target).st_dev:
        needs("/dev/shm", "no tmpfs apart from the temp directory's file system")
    state = shm / f"filegate-test-{os.getpid()}"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    try:
        h = WriteHistory()
        write_id, snap = begin_read(h, target, b"new content\n")
        replace_file(target, b"new content\n", expect=snap, shown=target.name)
        h.finish(write_id, ok=True)
        st = os.stat(blob_of(b"old\n"))
        assert st.st_ino != snap.ino and stat.S_IMODE(st.st_mode) == 0o600
        assert h.pre_image(h.find(write_id)) == b"old\n"  # type: ignore[arg-type]
    finally:
        shutil.rmtree(state, ignore_errors=True)


def test_a_record_the_log_cannot_take_whole_leaves_no_part_of_it_and_no_pre_image(target: Path) -> None:
    """A file size limit met in the middle of the record's line (RLIMIT_FSIZE, as `ulimit -f`;
    Python ignores SIGXFSZ, so the write is short, then EFBIG): the log is cut back to where
    it was, the pre-image linked for the write goes, and the refusal names the limit."""
    import resource

    history_dir().mkdir(parents=True, mode=0o700)
    log = history_dir() / "history.jsonl"
    log.write_bytes(b'{"id":"w-000000","evicted":%d}\n' % time.time() * 2000)  # recent: kept
    before = log.read_bytes()
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 100, hard))
    try:
        with pytest.raises(WriteError) as caught:
            begin_read(WriteHistory(), target, b"new content\n")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert "(file too large for the file system or the process's file size limit)" in caught.value.message
    assert log.read_bytes() == before
    assert not blob_of(b"old\n").exists() and os.stat(target).st_nlink == 1


def test_without_proc_or_of_another_owner_or_changed_in_size_the_pre_image_is_a_copy(
    target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases = ("no /proc", "another owner", "grown since read")
    for case in cases:
        target.write_bytes(b"old\n")
        blob_of(b"old\n").unlink(missing_ok=True)
        old, snap = read_snapshot(target)
        if case == "no /proc":
            monkeypatch.setenv("FILEGATE_SIMULATE", "no-proc")
        elif case == "another owner" and os.geteuid() == 0:
            os.chown(target, 54321, -1)
        elif case == "grown since read":
            with open(target, "ab") as f:
                f.write(b"more\n")
        WriteHistory().begin("WriteFile", rp(target), "cli", "auto", old, b"new\n", snap)
        monkeypatch.delenv("FILEGATE_SIMULATE", raising=False)
        st = os.stat(blob_of(b"old\n"))
        assert st.st_ino != snap.ino and blob_of(b"old\n").read_bytes() == b"old\n", case
        assert os.stat(target).st_nlink == 1, case


def test_a_pre_image_kept_already_is_not_stored_again(target: Path) -> None:
    h = WriteHistory()
    write_id, snap = begin_read(h, target, b"new content\n")
    replace_file(target, b"new content\n", expect=snap, shown=target.name)
    h.finish(write_id, ok=True)
    kept = os.stat(blob_of(b"old\n")).st_ino
    target.write_bytes(b"old\n")  # the same content again, in another inode
    begin_read(h, target, b"new content\n")
    assert os.stat(blob_of(b"old\n")).st_ino == kept


def test_a_copy_the_file_size_limit_cuts_short_leaves_no_part_of_it(
    target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import resource

    target.write_bytes(b"x" * 20_000)
    monkeypatch.setenv("FILEGATE_SIMULATE", "no-proc")  # a copy, not a link
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (8192, hard))
    try:
        with pytest.raises(WriteError) as caught:
            begin_read(WriteHistory(), target, b"new\n")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert "file size limit" in caught.value.message
    assert [p for p in (history_dir() / "objects").rglob("*") if p.is_file()] == []


# --- symlinks planted in the history directory -------------------------------------------------
# The directory is owner-only, so only its owner (or a process of theirs gone astray) can plant
# one; each open in it must still refuse to follow it rather than write or read elsewhere.


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory outside the history, where a planted symlink points."""
    path = tmp_path / "outside"
    path.mkdir()
    return path


def private_history_dir() -> Path:
    history_dir().mkdir(parents=True, mode=0o700)
    return history_dir()


def test_a_symlink_planted_as_the_lock_stops_the_write_and_creates_nothing_outside(
    target: Path, outside: Path
) -> None:
    (private_history_dir() / "lock").symlink_to(outside / "planted")  # followed, O_CREAT would make it
    with pytest.raises(WriteError) as caught:
        WriteHistory().begin("WriteFile", rp(target), "cli", "auto", b"old\n", b"new\n")
    assert "(too many levels of symbolic links)" in caught.value.message.lower()
    assert list(outside.iterdir()) == []


def test_a_symlink_planted_as_the_log_is_neither_read_nor_appended_to(target: Path, outside: Path) -> None:
    forged = outside / "forged.jsonl"
    line = Entry("w-f0f0f0", time.time(), "cli", "WriteFile", "/etc/x", "auto", kept=False).line()
    forged.write_text(json.dumps(line) + "\n")
    (private_history_dir() / "history.jsonl").symlink_to(forged)
    with pytest.raises(OSError) as read:
        WriteHistory().entries()  # not the forged entry
    assert read.value.errno == errno.ELOOP
    with pytest.raises(WriteError):
        WriteHistory().begin("WriteFile", rp(target), "cli", "auto", b"old\n", b"new\n")
    assert forged.read_text() == json.dumps(line) + "\n"


def test_an_outcome_is_not_appended_through_a_symlink_that_replaced_the_log(
    target: Path, outside: Path
) -> None:
    """finish() appends without reading first: its own open must refuse the symlink."""
    h = WriteHistory()
    write_id = h.begin("WriteFile", rp(target), "cli", "auto", b"old\n", b"new\n")
    moved = outside / "history.jsonl"
    os.replace(h.log_path, moved)
    h.log_path.symlink_to(moved)
    before = moved.read_bytes()
    h.finish(write_id, ok=True)  # its failure is not the write's: swallowed
    assert moved.read_bytes() == before


@pytest.fixture
def fixed_temp_names(monkeypatch: pytest.MonkeyPatch) -> str:
    """A seam, named so: the ``secrets`` of preimages.py and historylog.py replaced so the
    random part of every temp file's name is one known string (whatever length is asked), so a
    test can plant a symlink where the next temp goes. Write ids are still drawn at random."""
    fixed = types.SimpleNamespace(token_hex=lambda n: "5eed5eed5eed")
    monkeypatch.setattr(preimages, "secrets", fixed)
    monkeypatch.setattr(historylog, "secrets", fixed)
    return f"{os.getpid()}-5eed5eed5eed"


def test_a_symlink_planted_where_a_pre_image_temp_goes_stops_the_write(
    target: Path, outside: Path, fixed_temp_names: str
) -> None:
    digest = sha(b"old\n")
    objects = private_history_dir() / "objects" / digest[:2]
    objects.mkdir(parents=True, mode=0o700)
    (objects / f"tmp-{fixed_temp_names}").symlink_to(outside / "planted")
    with pytest.raises(WriteError, match=r"\(File exists\)"):
        WriteHistory().begin("WriteFile", rp(target), "cli", "auto", b"old\n", b"new\n")
    assert list(outside.iterdir()) == []
    assert not (objects / digest[2:]).exists()


def test_a_symlink_planted_where_the_compacted_log_goes_is_removed_not_followed(
    target: Path, outside: Path, fixed_temp_names: str
) -> None:
    """As a compacted log's temp left by a killed compaction would be (tests/stress)."""
    h = WriteHistory(limits=Limits(max_bytes=5))
    planted = private_history_dir() / f"history.jsonl.tmp-{fixed_temp_names}"
    planted.symlink_to(outside / "planted")
    ids = [write(h, target, b"0" * 5)]
    ino = h.log_path.stat().st_ino
    ids += [
        write(h, target, b"%d" % k * 5) for k in (1, 2, 3)
    ]  # each evicts the one before: a compaction due
    assert h.log_path.stat().st_ino != ino and not h.log_path.is_symlink()
    assert list(outside.iterdir()) == [] and not os.path.lexists(planted)
    assert [e.id for e in WriteHistory().entries()] == ids[-1:]


def test_a_compaction_that_fails_leaves_the_log_and_the_write_as_they_were(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The rewritten log cannot be written whole (a full disk; ENOSPC injected into its fsync,
    a mock): the write it came after stands, the log is the one before, and the next due
    write compacts it."""
    h = WriteHistory(limits=Limits(max_bytes=30))
    files = _files(tmp_path, 8, 30)
    real_fsync = os.fsync
    failing = [True]

    def fsync(fd: int) -> None:
        if failing[0] and os.readlink(f"/proc/self/fd/{fd}").split("/")[-1].startswith("history.jsonl.tmp-"):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(historylog.os, "fsync", fsync)
    ino = None
    for path in files[:4]:
        ino = h.log_path.stat().st_ino if ino is None and h.log_path.exists() else ino
        last = write(h, path, b"x")
    assert "history: could not compact" in caplog.text and "(no space left on device)" in caplog.text
    assert h.log_path.stat().st_ino == ino and [p.name for p in history_dir().glob("*.tmp-*")] == []
    assert [e.id for e in WriteHistory().entries()] == [last] and h.find(last).state == "done"  # type: ignore[union-attr]
    failing[0] = False
    write(h, files[4], b"x")
    assert h.log_path.stat().st_ino != ino


def test_a_symlink_planted_as_a_linked_pre_image_is_not_followed_by_the_outcome(
    target: Path, outside: Path, with_proc: None
) -> None:
    """After the rename the history makes its linked pre-image owner-only: through the
    history's own name, never through a symlink put there meanwhile, even one to that inode."""
    h = WriteHistory()
    write_id, snap = begin_read(h, target, b"new content\n")
    replace_file(target, b"new content\n", expect=snap, shown=target.name)
    moved = outside / "pre-image"
    os.replace(blob_of(b"old\n"), moved)
    blob_of(b"old\n").symlink_to(moved)
    h.finish(write_id, ok=True)
    assert stat.S_IMODE(os.stat(moved).st_mode) == 0o640  # not made the history's
    assert blob_of(b"old\n").is_symlink()


def test_a_file_swapped_for_a_symlink_after_it_was_read_is_copied_not_linked(
    target: Path, outside: Path, with_proc: None
) -> None:
    """The file read is renamed away and a symlink to it put in its place before begin():
    the link of its inode must not follow the symlink (the inode would then be kept while
    named outside the history); the bytes read are copied instead."""
    h = WriteHistory()
    old, snap = read_snapshot(target)
    moved = outside / "a.txt"
    os.replace(target, moved)
    target.symlink_to(moved)
    h.begin("WriteFile", rp(target), "cli", "auto", old, b"new\n", snap)
    st = os.stat(blob_of(b"old\n"))
    assert st.st_ino != snap.ino and os.stat(moved).st_nlink == 1
    assert blob_of(b"old\n").read_bytes() == b"old\n"


def test_a_file_swapped_for_a_fifo_after_it_was_read_is_copied_without_blocking(
    target: Path, with_proc: None
) -> None:
    """The link's open must not wait for a FIFO's writer (O_NONBLOCK): the bytes read are copied."""
    import threading

    h = WriteHistory()
    old, snap = read_snapshot(target)
    target.unlink()
    os.mkfifo(target)
    done: list[str] = []
    worker = threading.Thread(
        target=lambda: done.append(h.begin("WriteFile", rp(target), "cli", "auto", old, b"new\n", snap))
    )
    worker.start()
    worker.join(10)
    if worker.is_alive():  # blocked in the open: a writer releases it, then the test fails
        os.close(os.open(target, os.O_WRONLY | os.O_NONBLOCK))
        worker.join(10)
        pytest.fail("begin() blocked opening a FIFO")
    assert done and blob_of(b"old\n").read_bytes() == b"old\n"


def test_a_history_directory_of_another_user_stops_the_write(target: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        needs("root", "a directory of another user is made by chown")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 54321, 54321)
    with pytest.raises(WriteError, match=rf"\({theirs} is not a directory of this user\)"):
        WriteHistory(theirs).begin("WriteFile", rp(target), "cli", "auto", b"old\n", b"new\n")
    assert list(theirs.iterdir()) == []


def test_a_failed_write_leaves_the_pre_image_an_earlier_write_kept(target: Path) -> None:
    """The record cannot be appended (the file size limit): the write's own new pre-image goes,
    but not one it found kept already, which the earlier write's record still names."""
    import resource

    h = WriteHistory()
    first = write(h, target, b"new\n")
    target.write_bytes(b"old\n")  # the same pre-image again
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (h.log_path.stat().st_size + 20, hard))
    try:
        with pytest.raises(WriteError, match="file size limit"):
            h.begin("WriteFile", rp(target), "cli", "auto", b"old\n", b"newer\n")
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert h.pre_image(h.find(first)) == b"old\n"  # type: ignore[arg-type]


def test_a_write_older_than_the_one_before_it_still_ages_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bounds are checked against figures kept up to date, not a scan per write: a record
    out of time order (the clock stepped back between two writes) still counts as the oldest."""
    clock = [1000.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    h = WriteHistory(limits=Limits(max_age_s=10))
    a, b, c = _files(tmp_path, 3, 5)
    first = write(h, a, b"x")
    clock[0] = 900.0  # stepped back: the second write looks 100 s older than the first
    second = write(h, b, b"y")
    clock[0] = 1005.0  # the first is 5 s old, the second 105 s
    third = write(h, c, b"z")
    assert [e.id for e in h.entries()] == [first, third] and h.evicted(second)


def test_the_kept_bytes_agree_with_a_fresh_reading_through_evictions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [0.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    h = WriteHistory(limits=Limits(max_bytes=100, max_age_s=50))
    files = _files(tmp_path, 6, 30)
    for i, path in enumerate(files * 2):  # the second round keeps the first round's contents
        clock[0] = i * 10.0
        write(h, path, b"round %d" % i)
        fresh = WriteHistory(limits=h.limits)
        fresh.entries()
        kept = {e.before: e.size_before for e in fresh.entries() if e.kept and e.before}
        assert h.kept_bytes() == fresh.kept_bytes() == sum(kept.values()) <= 100
    assert sum(1 for e in h.entries()) < 12  # evictions happened, by age and by bytes


def test_writes_about_to_age_go_with_an_aged_one_so_the_log_is_not_rewritten_per_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    clock = [0.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    h = WriteHistory(limits=Limits(max_age_s=100))
    a, b, c, d = _files(tmp_path, 4, 5)
    ids = []
    for when, path in ((0.0, a), (5.0, b), (20.0, c)):
        clock[0] = when
        ids.append(write(h, path, b"x"))
    clock[0] = 101.0  # the first is past the bound, the second within its last tenth (96 s)
    ids.append(write(h, d, b"y"))
    assert [e.id for e in h.entries()] == ids[2:] and h.evicted(ids[0]) and h.evicted(ids[1])
    assert [r.getMessage() for r in caplog.records] == [
        "history: evicted 2 write(s), oldest first (older than --history-max-age or within its last tenth)"
    ]
    ino = h.log_path.stat().st_ino
    clock[0] = 109.0  # the third is 89 s old: nothing goes, the log is appended to
    write(h, a, b"z")
    assert h.log_path.stat().st_ino == ino and len(h.entries()) == 3


def test_the_last_tombstone_expiring_leaves_none_and_writes_go_on(
    target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    history_dir().mkdir(parents=True, mode=0o700)
    (history_dir() / "history.jsonl").write_bytes(b'{"id":"w-000001","evicted":0}\n')
    h = WriteHistory(limits=Limits(max_age_s=10))
    ids = [write(h, target, b"new\n")]
    h.log.compact(clock[0], 100)  # expired: gone, none left
    ids.append(write(h, target, b"newer\n"))
    assert [e.id for e in h.entries()] == ids and not h.evicted("w-000001")


def test_a_pre_image_an_evicted_write_and_the_new_one_share_stays(
    target: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file holds again what an aged write kept: the write that evicts it keeps that very
    pre-image (found kept already), so it is not removed with the aged write's record."""
    clock = [0.0]
    monkeypatch.setattr(store.time, "time", lambda: clock[0])
    h = WriteHistory(limits=Limits(max_age_s=10))
    first = write(h, target, b"new\n")  # keeps "old\n"
    target.write_bytes(b"old\n")  # back to it, outside the history
    clock[0] = 20.0
    second = write(h, target, b"newer\n")  # keeps "old\n" again; the first ages out
    assert h.evicted(first) and h.pre_image(h.find(second)) == b"old\n"  # type: ignore[arg-type]
    fresh = WriteHistory()
    fresh.entries()
    assert h.kept_bytes() == 4 == fresh.kept_bytes()


# --- the log's index, its old format, compaction ---------------------------------------------

# A history as filegate wrote it before issue 56: SHA-256 content addresses, a record's keys in
# the dataclass's order, no "hash" field.
OLD_FORMAT = (
    '{"id":"w-0a0a0a","time":%r,"client":"cli","tool":"WriteFile","path":"/w/a.txt","route":"auto",'
    '"kept":true,"before":"%s","after":"%s","size_before":4,"size_after":4,"mode":420}\n'
    '{"id":"w-0a0a0a","outcome":"done"}\n'
    '{"id":"w-0b0b0b","time":%r,"client":"cli","tool":"WriteFile","path":"/w/b.txt","route":"auto",'
    '"kept":false,"not_kept":"sensitive file"}\n'
)


def old_format_history() -> WriteHistory:
    before, after = (hashlib.sha256(b).hexdigest() for b in (b"old\n", b"new\n"))
    private_history_dir()
    now = time.time()
    (history_dir() / "history.jsonl").write_text(OLD_FORMAT % (now - 60, before, after, now - 59))
    blob = history_dir() / "objects" / before[:2] / before[2:]
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"old\n")
    return WriteHistory()


def test_a_history_written_before_blake3_reads_as_it_is(target: Path) -> None:
    h = old_format_history()
    old, sensitive = h.entries()
    assert (old.id, old.hash, old.state, old.kept, old.size_before) == ("w-0a0a0a", "sha256", "done", True, 4)
    assert old.before == hashlib.sha256(b"old\n").hexdigest() and h.pre_image(old) == b"old\n"
    assert old.digest(b"new\n") == old.after  # what an undo checks the file against
    assert (sensitive.kept, sensitive.not_kept, sensitive.state) == (False, "sensitive file", "unconfirmed")
    assert h.kept_bytes() == 4
    new = write(h, target, b"x")  # a new write beside them: BLAKE3
    assert h.find(new).hash == "blake3" and h.find(new).before == sha(b"old\n")  # type: ignore[union-attr]
    assert h.kept_bytes() == 8  # the same bytes, kept at two addresses
    h.log.compact(time.time(), 1e9)  # the old records rewritten in today's key order, still SHA-256
    assert [e for e in WriteHistory().entries()] == h.entries() and lines(h)[0]["hash"] == "sha256"
    assert list(lines(h)[0])[:5] == ["id", "time", "kept", "before", "size_before"]


def test_the_index_reads_each_kind_of_line_as_json_says_it(tmp_path: Path) -> None:
    """The index's regular expression (a record's first fields) agrees with a JSON parse of
    every kind of line, written in today's key order and in the old one."""
    h = WriteHistory(limits=Limits(max_bytes=10))
    odd = tmp_path / os.fsdecode(b'q"uote\\ caf\xe9 \xff.txt')
    odd.write_bytes(b"odd\n")
    made, big = tmp_path / "made.txt", tmp_path / "big.txt"
    big.write_bytes(b"B" * 11)
    ids = [
        write(h, odd, b"x"),
        write(h, made, b"new\n"),
        write(h, big, b"y"),
        write(h, odd, b"z", sensitive=True),
    ]
    ids.append(h.begin("UndoWrite", rp(made), "cli", "auto", b"new\n", None))
    ids.append(write(h, odd, b"w", ok=False))
    pair = [SetFile(rp(odd), odd.read_bytes(), b"v"), SetFile(rp(tmp_path / "set-new.txt"), None, b"s")]
    ids += h.begin_set("ApplyPatch", pair, "cli", "auto")
    h.finish_set(ids[-2:], ok=True)
    expected = [Entry.parse(r, "unconfirmed") for r in lines(h) if "time" in r]
    states = {r["id"]: r["outcome"] for r in lines(h) if "outcome" in r}
    expected = [dataclasses.replace(e, state=states.get(e.id, "unconfirmed")) for e in expected]
    assert WriteHistory().entries() == expected and [e.id for e in expected] == ids
    reordered = [json.dumps(dict(sorted(r.items())), separators=(",", ":")) for r in lines(h)]
    h.log_path.write_text("\n".join(reordered) + "\n")  # every record through the JSON path
    again = WriteHistory()
    assert again.entries() == expected and again.kept_bytes() == h.kept_bytes()


def test_entries_after_a_write_are_those_recorded_after_it(target: Path) -> None:
    h = WriteHistory()
    ids = [write(h, target, b"%d" % k) for k in range(4)]
    assert [e.id for e in h.entries(after=ids[1])] == ids[2:]
    assert h.entries(after=ids[-1]) == [] and h.entries(after="w-nothere") == []


def test_a_line_a_crash_cut_short_is_skipped_and_the_next_record_is_whole(
    target: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = WriteHistory()
    first = write(h, target, b"new\n")
    with open(h.log_path, "ab") as f:  # killed mid-append (a power loss: a part of a line)
        f.write(b'{"id":"w-123456","time":1,"kept":tr')
    second = write(h, target, b"newer\n")  # appended on a line of its own
    assert [e.id for e in WriteHistory().entries()] == [first, second]
    assert f"history: skipped a damaged line in {h.log_path}" in caplog.text


def test_a_compaction_comes_once_the_evicted_lines_outnumber_the_live_ones(tmp_path: Path) -> None:
    """Each write evicts the one before (the byte bound): lines accumulate, and the log is
    rewritten only when more than half of them are dead; a fresh reading agrees each time."""
    h = WriteHistory(limits=Limits(max_bytes=30))
    files = _files(tmp_path, 30, 30)
    inodes, sizes = [], []
    for path in files:
        write(h, path, b"x")
        inodes.append(h.log_path.stat().st_ino)
        sizes.append(len(h.log_path.read_bytes().splitlines()))
        fresh = WriteHistory()
        assert fresh.entries() == h.entries() and fresh.kept_bytes() == h.kept_bytes() == 30
        assert all(fresh.evicted(e.id) for e in h.entries()) is False
    compactions = sum(a != b for a, b in itertools.pairwise(inodes))
    assert 3 <= compactions <= 6, (compactions, sizes)  # the live lines grow by a tombstone each
    assert max(sizes) <= 2 * (3 + len(files)) and len(tombstones(h)) == len(files) - 1


def test_a_bound_evicts_a_set_whole(tmp_path: Path) -> None:
    """The byte bound needs only the oldest pre-image gone, which is a set's first file: the
    set's other file goes with it (a set is undone as one, so it is kept as one)."""
    h = WriteHistory(limits=Limits(max_bytes=100))
    a, b, c = _files(tmp_path, 3, 40)
    ids = h.begin_set("ApplyPatch", [SetFile(rp(a), a.read_bytes(), b"x"), SetFile(rp(b), b.read_bytes(), b"y")],
                      "cli", "auto")  # fmt: skip
    h.finish_set(ids, ok=True)
    assert [e.group for e in h.entries()] == [ids[0], ids[0]] and h.kept_bytes() == 80
    last = write(h, c, b"z")  # 120 > 100: the first (40) would do; its set's second goes too
    assert [e.id for e in h.entries()] == [last] and all(h.evicted(i) for i in ids)
    fresh = WriteHistory()
    assert [e.id for e in fresh.entries()] == [last] and fresh.kept_bytes() == 40


def test_a_history_folder_without_a_log_reads_as_empty(target: Path) -> None:
    """Killed after the history's folders were made and before its first line."""
    private_history_dir()
    h = WriteHistory()
    assert h.entries() == [] and h.entries(after="w-0a0b0c") == [] and h.find("w-0a0b0c") is None
    assert h.ids() == [] and h.kept_bytes() == 0
