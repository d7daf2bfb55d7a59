"""Grants over MCP (SPEC §11): what a question offers beyond "approve this write", and the grant
a granted answer gives — kept in the session that asked, or, where a 2026-07-28 HTTP client has
no session, sealed into a handle its result names. What a grant covers is policy/grants.py's
verdict; the key and the record `filegate rules` lists are fsio/grantstore.py's."""

from __future__ import annotations

import logging
import math
import os
import time
import weakref

import anyio

from filegate.fsio.grantstore import GrantRecord, GrantStoreError, grant_key, record_end, record_grant
from filegate.policy.escape import escape
from filegate.policy.grants import (
    Grant,
    GrantKind,
    describe,
    duration,
    new_grant_id,
    offer,
    seal,
    shown_target,
)
from filegate.policy.workspace import Workspace
from filegate.server.questions import Choices, write_class
from filegate.settings import Settings
from filegate.tools.outcome import WriteRequest

log = logging.getLogger("filegate")
# Every grant is logged here (SPEC §11), whatever --log-level says: with the writes' own log,
# the audit trail of what went unasked and why.
grants_log = logging.getLogger("filegate.grants")
grants_log.setLevel(logging.INFO)


class GrantKey:
    """The key grant handles are sealed with (fsio/grantstore.py: shared by every process of
    this user through the state directory), read or made once, off the event loop. None when
    it cannot be had: handles are then neither offered nor honoured (said once in the log)."""

    def __init__(self) -> None:
        self._key: bytes | None = None
        self._why: str | None = None  # why there is none: tried once, said once

    async def get(self) -> bytes | None:
        if self._key is None and self._why is None:
            try:
                self._key = await anyio.to_thread.run_sync(grant_key)
            except GrantStoreError as exc:
                self._why = str(exc)
                log.warning("grant handles are off: %s", escape(self._why))
        return self._key


async def choices_for(
    request: WriteRequest, settings: Settings, workspace: Workspace, keys: GrantKey, *, session: bool
) -> Choices:
    """What a question about ``request`` offers beside approve and reject: in a session, its
    file, its top folder and its class (inside / outside the workspace), for the session;
    without one, its file and folder for ``--grant-ttl`` (as a handle). Nothing for a path asked
    about every time, nor under ``--approval ask-always``."""
    if settings.approval == "ask-always" or request.asked_always:
        return Choices()
    if not session and await keys.get() is None:
        return Choices()  # no session to keep a grant in, and no key to seal a handle with
    grantable = offer(workspace, request.targets)
    folder = ""
    if grantable is not None and grantable.folder is not None:
        folder = shown_target(workspace, Grant("folder", grantable.folder))
    return Choices(
        file=grantable is not None and grantable.file is not None,
        folder=folder,
        write_class=write_class(request) if session else None,
        lasting="for this session" if session else f"for {duration(settings.grant_ttl)}",
    )


async def give(
    request: WriteRequest,
    kind: GrantKind,
    settings: Settings,
    workspace: Workspace,
    keys: GrantKey,
    kept: list[Grant] | None,
    held: str,
    client: str,
    session: object = None,
) -> str | None:
    """Give the grant of ``kind`` for ``request``'s paths: appended to ``kept`` (a session's
    grants; ``session``'s end is recorded as the grant's), or, with no session (``kept`` None),
    sealed into a handle. Returns the line the result ends with ("" in a session), or None when
    nothing is grantable now (the path is judged again: a rule may have come since)."""
    grantable = offer(workspace, request.targets)
    target = None if grantable is None else grantable.file if kind == "file" else grantable.folder
    if target is None:
        return None
    line = ""
    if kept is not None:
        grant = Grant(kind, target, None, new_grant_id())
        kept.append(grant)
        if session is not None:  # `filegate rules` no longer lists it once the session is gone
            weakref.finalize(session, record_end, grant.id)
    else:
        key = await keys.get()
        if key is None:
            return None
        ttl = settings.grant_ttl
        grant = Grant(kind, target, float(math.ceil(time.time() + ttl)), new_grant_id())  # never less
        line = f"Grant: {seal(key, workspace, grant)}: {describe(workspace, grant)} for {duration(ttl)}."
    await record(grant, held, workspace, client)
    return line


async def record(grant: Grant, held: str, workspace: Workspace, client: str) -> None:
    """Every grant logged (who, what, where, until when; escaped, SPEC §2.9) and recorded in the
    state directory for `filegate rules`."""
    scope = describe(workspace, grant)
    who = escape(client)
    until = "while the session lasts" if grant.expires is None else f"until {_iso(grant.expires)}"
    workdir = str(workspace.workdir)
    grants_log.info(
        "grant %s given: %s in workspace %s, %s (%s); client: %s",
        grant.id,
        scope,
        escape(workdir),
        until,
        held,
        who or "-",
    )
    target = shown_target(workspace, grant)
    entry = GrantRecord(
        grant.id, time.time(), grant.kind, target, workdir, who, held, grant.expires, os.getpid()
    )
    try:
        await anyio.to_thread.run_sync(record_grant, entry)
    except (OSError, GrantStoreError) as exc:  # the log line above is the grant's record
        log.warning("grant %s could not be recorded for `filegate rules`: %s", grant.id, escape(str(exc)))


def _iso(when: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))
