"""A write recorded by a filegate from before BLAKE3: its record as that version wrote it (SHA-256
hashes, no ``hash`` field, the old key order) and its pre-image at its SHA-256 address. Tests of
what reads the history (UndoWrite, the rewind, Changes) use it to check that an old entry is
read as it is and compared in its own hash."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from filegate.fsio.history import history_dir
from filegate.fsio.preimages import make_private_dir


def record_old_write(path: Path, before: bytes, after: bytes, write_id: str, *, age: float = 60.0) -> None:
    """Append the old filegate's record of a WriteFile of ``path`` (``before`` → ``after``), done."""
    sha = [hashlib.sha256(b).hexdigest() for b in (before, after)]
    record = {
        "id": write_id, "time": time.time() - age, "client": "old", "tool": "WriteFile", "path": str(path),
        "route": "auto", "kept": True, "before": sha[0], "after": sha[1], "size_before": len(before),
        "size_after": len(after), "mode": 0o640,
    }  # fmt: skip
    root = history_dir()
    make_private_dir(root)
    line = json.dumps(record, separators=(",", ":"))  # as filegate wrote it
    with open(root / "history.jsonl", "a") as f:
        f.write(f'{line}\n{{"id":"{write_id}","outcome":"done"}}\n')
    blob = root / "objects" / sha[0][:2] / sha[0][2:]
    make_private_dir(blob.parent)
    blob.write_bytes(before)
