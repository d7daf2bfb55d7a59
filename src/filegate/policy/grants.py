"""Grants (SPEC §11): what an answer such as "approve edits under `src/` for this session" lets
through without a question, as a verdict on paths. Pure: paths, the workspace and a key in,
verdicts and handles out (server/approval.py offers and keeps grants; fsio/grantstore.py keeps
the key and the log).

- A grant names a **folder** (the path's top folder inside the workspace: ``src`` for
  ``src/pkg/a.py``; never a workspace directory itself, never outside it) or a **file**.
- It never covers a path that is asked about every time: a sensitive file, a file a client rule
  hides, a rule file itself, a path an ``ask`` (or ``deny``) rule names. That is decided here,
  from the path, whatever the request says of itself, so a grant cannot reach them.
- A set of paths (ApplyPatch) passes only when every one of them does.
- The user's own ``~/.claude/settings.json`` ``allow`` ``Edit(...)``/``Write(...)`` rules count as
  "do not ask" for the paths they name, under the same exclusions (policy/clientrules.py reads
  them from that file only: a workspace's ``.claude/`` cannot grant itself writes).

A 2026-07-28 HTTP client has no session to keep a grant in, so it carries a **handle** back: the
grant sealed (HMAC-SHA256) under the server's key, bound to the target, the workspace (its
directories) and an expiry. A handle that does not verify, has expired, was minted for another
workspace or does not cover the path is simply no grant (the user is asked).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
import secrets
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from filegate.policy.workspace import Workspace

GrantKind = Literal["folder", "file"]
# What let a write through without a question: a grant, or the user's own allow rule.
Unasked = Literal["grant", "allow-rule"]

# The handle's layout (after "g-" and the id): version, kind, expiry (uint32 seconds), the
# workspace's tag, the index of the workspace directory the target is under, the target's path
# relative to it; then the MAC. The MAC is cut to 96 bits (HMAC-SHA256-96, RFC 2404's length):
# a forger must guess it whole, one try per call.
HANDLE_VERSION = 1
MAC_BYTES = 12
TAG_BYTES = 4
ID_BYTES = 4
_HEAD = struct.Struct(">BcI4sB")  # version, kind, expiry, workspace tag, directory index
_KINDS: dict[GrantKind, bytes] = {"folder": b"d", "file": b"f"}
# A handle longer than this is no handle of ours (a target path is at most PATH_MAX).
MAX_HANDLE_CHARS = 6000
KEY_BYTES = 32
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True, slots=True)
class Grant:
    """One grant: a folder or a file (real paths), until ``expires`` (``time.time()`` seconds;
    None: as long as the session that holds it)."""

    kind: GrantKind
    target: str
    expires: float | None = None
    id: str = ""  # "g-" and 8 hex digits: how the log and `filegate rules` name it

    def live(self, now: float) -> bool:
        return self.expires is None or now < self.expires

    def holds(self, workspace: Workspace, real: str) -> bool:
        """Whether ``real`` (a resolved path) is what this grant names: the file itself, or a
        file anywhere under the folder (component-wise, in the file system's case rules)."""
        fold = workspace.folds_case(self.target)
        if self.kind == "file":
            return workspace.rules.within(real, self.target, fold_case=fold) and len(real) == len(self.target)
        # under the folder, never the folder itself (in any spelling its file system takes)
        return len(real) > len(self.target) and workspace.rules.within(real, self.target, fold_case=fold)


@dataclass(frozen=True, slots=True)
class Offer:
    """What a question about a write may offer beyond "approve": this file, and the folder
    (None where it may not: a file directly in a workspace directory has no folder to grant)."""

    file: str | None  # the file's real path (one file only)
    folder: str | None  # the top folder's real path


def new_grant_id() -> str:
    return f"g-{secrets.token_hex(ID_BYTES)}"


def asks_always(workspace: Workspace, real: str) -> bool:
    """A path no grant and no allow rule covers: sensitive (a secret pattern, or hidden by a
    client rule), a client rule file itself, or named by an ``ask`` or ``deny`` rule."""
    key = workspace.rules.secret_key(real)
    if workspace.is_sensitive(real):
        return True
    client = workspace.secrets.client
    return client is not None and client.write_rule(key) is not None


def top_folder(workspace: Workspace, real: str) -> str | None:
    """The folder a folder grant for ``real`` names: the first folder below the (innermost)
    workspace directory holding it; None when ``real`` lies directly in a workspace directory,
    or outside the workspace."""
    home = _home_dir(workspace, real)
    if home is None:
        return None
    sep = workspace.rules.sep
    rest = real[len(home) :].lstrip(sep)
    first, found, _ = rest.partition(sep)
    if not found or not first:
        return None
    return home.rstrip(sep) + sep + first


def offer(workspace: Workspace, paths: Sequence[Path]) -> Offer | None:
    """The grants a question about writing ``paths`` may offer; None when none may (a path
    outside the workspace, or one that is asked about every time). A set offers its common
    top folder only."""
    reals = [str(p) for p in paths]
    if not reals or any(not workspace.contains(r) or asks_always(workspace, r) for r in reals):
        return None
    folders = {top_folder(workspace, r) for r in reals}
    folder = folders.pop() if len(folders) == 1 else None
    return Offer(reals[0] if len(reals) == 1 else None, folder)


def unasked(
    workspace: Workspace,
    paths: Sequence[Path],
    grants: Iterable[Grant],
    now: float,
    *,
    allow_rules: bool = True,
) -> Unasked | None:
    """Whether a write to every one of ``paths`` may go without a question, and why: each is
    held by a live grant (inside the workspace) or named by the user's own allow rule, and none
    is asked about every time ("grant" when a grant let any of them through). None: ask (or
    decide as without any grant)."""
    live = [g for g in grants if g.live(now)]
    client = workspace.secrets.client if allow_rules else None
    why: Unasked | None = None
    for path in paths:
        real = str(path)
        if asks_always(workspace, real):
            return None
        if workspace.contains(real) and any(g.holds(workspace, real) for g in live):
            why = "grant"  # the user's answer: said whenever one let a path of the set through
        elif client is not None and client.allow_source(workspace.rules.secret_key(real)) is not None:
            why = why or "allow-rule"
        else:
            return None
    return why


def shown_target(workspace: Workspace, grant: Grant) -> str:
    """A grant's target as a message shows it: `src/` (a folder ends with its separator),
    `src/a.py`; relative to the workdir when inside it, escaped."""
    name = workspace.display(Path(grant.target))
    sep = workspace.rules.sep
    return name + sep if grant.kind == "folder" and not name.endswith(sep) else name


def describe(workspace: Workspace, grant: Grant) -> str:
    """What a grant covers, in the words a result and a log line use: edits under `src/`,
    edits of `src/a.py`."""
    what = "under" if grant.kind == "folder" else "of"
    return f"edits {what} `{shown_target(workspace, grant)}`"


def duration(seconds: float) -> str:
    """30 minutes, 2 hours, 90 seconds: a TTL as a result says it."""
    s = round(seconds)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if s >= size and s % size == 0:
            n = s // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{s} second{'s' if s != 1 else ''}"


# --- handles (2026-07-28 HTTP: no session to keep a grant in) -----------------------------------


def workspace_tag(key: bytes, workspace: Workspace) -> bytes:
    """Which workspace a handle was minted for: the configured directories (not a client's roots),
    under the key, so the tag says nothing of them."""
    dirs = "\0".join(str(d) for d in (workspace.workdir, *workspace.add_dirs))
    mac = hmac.new(key, b"filegate-grant-workspace\0" + os.fsencode(dirs), hashlib.sha256)
    return mac.digest()[:TAG_BYTES]


def seal(key: bytes, workspace: Workspace, grant: Grant) -> str:
    """The handle of ``grant`` (which must have an id and an expiry, and lie inside the
    workspace): ``g-<id>.<sealed body>``."""
    assert grant.expires is not None and grant.id.startswith("g-")
    dirs = _configured(workspace)
    index = max(i for i, d in enumerate(dirs) if _under(workspace, grant.target, d))
    rel = grant.target[len(dirs[index]) :].lstrip(workspace.rules.sep)
    ident = bytes.fromhex(grant.id[2:])
    tag = workspace_tag(key, workspace)
    head = _HEAD.pack(HANDLE_VERSION, _KINDS[grant.kind], int(grant.expires), tag, index)
    body = ident + head + os.fsencode(rel)
    return f"{grant.id}.{_b64(body[ID_BYTES:] + _mac(key, body))}"


def unseal(key: bytes, workspace: Workspace, handle: str, now: float) -> Grant | None:
    """The grant a handle carries, if it is one this key minted for this workspace and it has
    not expired; else None (never why: a caller learns nothing by probing)."""
    handle = handle.strip()
    if len(handle) > MAX_HANDLE_CHARS or not handle.startswith("g-"):
        return None
    ident_hex, dot, sealed = handle[2:].partition(".")
    if len(ident_hex) != 2 * ID_BYTES:  # fromhex skips spaces: "ab cd" is no id
        return None
    try:
        ident = bytes.fromhex(ident_hex)
    except ValueError:
        return None
    raw = _unb64(sealed)
    if raw is None or not dot or len(raw) < _HEAD.size + MAC_BYTES:  # the id's length checked above
        return None
    body, mac = ident + raw[:-MAC_BYTES], raw[-MAC_BYTES:]
    if not hmac.compare_digest(_mac(key, body), mac):
        return None
    version, kind, expires, tag, index = _HEAD.unpack_from(body, ID_BYTES)
    rel = os.fsdecode(body[ID_BYTES + _HEAD.size :])
    dirs = _configured(workspace)
    if version != HANDLE_VERSION or not hmac.compare_digest(tag, workspace_tag(key, workspace)):
        return None
    if now >= expires or index >= len(dirs) or not rel or ".." in rel.split(workspace.rules.sep):
        return None
    names = {v: k for k, v in _KINDS.items()}
    if kind not in names:
        return None
    target = dirs[index].rstrip(workspace.rules.sep) + workspace.rules.sep + rel
    return Grant(names[kind], target, float(expires), f"g-{ident_hex.lower()}")


def _mac(key: bytes, body: bytes) -> bytes:
    return hmac.new(key, b"filegate-grant\0" + body, hashlib.sha256).digest()[:MAC_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes | None:
    """``text`` as base64url without its padding (excess padding is ignored), or None."""
    if not _BASE64URL.fullmatch(text):
        return None
    try:
        return base64.urlsafe_b64decode(text + "==")
    except ValueError:  # a length no encoding has (4n + 1 characters)
        return None


def _configured(workspace: Workspace) -> list[str]:
    return [str(d) for d in (workspace.workdir, *workspace.add_dirs)]


def _under(workspace: Workspace, real: str, directory: str) -> bool:
    return workspace.rules.within(real, directory, fold_case=workspace.folds_case(directory))


def _home_dir(workspace: Workspace, real: str) -> str | None:
    """The innermost of the workspace's directories (roots included) that holds ``real``."""
    holding = [str(d) for d in workspace.dirs if _under(workspace, real, str(d))]
    return max(holding, key=len) if holding else None
