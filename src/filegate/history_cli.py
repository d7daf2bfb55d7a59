"""``filegate history`` and ``filegate undo``: the write history from a terminal.

``filegate undo ID`` goes through the very route an UndoWrite call takes (tools/undo_write.py:
the same checks, the file's lock shared with running servers, its own history line), with the
terminal as the approver: it prints the question (the diff) and asks y/N unless ``--yes``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from filegate.flags import ArgumentParser
from filegate.fsio.history import Entry, Limits, WriteHistory, history_dir
from filegate.fsio.pending import shown_home_relative
from filegate.policy.escape import escape
from filegate.settings import Settings
from filegate.tools.outcome import Approver, Decision, ToolEnv, WriteRequest

_DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(value: str, now: float | None = None) -> float:
    """A time: ISO 8601 ("2026-11-27", "2026-11-27T14:00", local time unless it says) or an age
    ("90m", "2h", "3d": that long ago). argparse.ArgumentTypeError otherwise."""
    now = time.time() if now is None else now
    text = value.strip()
    unit = text[-1:].lower()
    if unit in _DURATION_UNITS and text[:-1].replace(".", "", 1).isdigit():
        return now - float(text[:-1]) * _DURATION_UNITS[unit]
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is neither a date/time (2026-11-27T14:00) nor an age (90m, 2h, 3d)"
        ) from None


# A terminal has no client budget: the whole answer, up to this (a pager can take it).
TERMINAL_BUDGET = 4 << 20


def _history(settings: Settings | None = None) -> WriteHistory:
    settings = settings or Settings(workdir=Path.cwd())
    return WriteHistory(limits=Limits(settings.history_max_bytes, settings.history_max_age))


def terminal_env(approver: Approver, client: str) -> ToolEnv:
    """The current folder's workspace (its settings from FILEGATE_* variables), the history:
    what ``filegate undo`` and ``filegate changes`` run their tool in."""
    from filegate.policy.secrets import SecretMatcher
    from filegate.policy.workspace import Workspace

    settings = Settings(workdir=Path.cwd())
    workspace = Workspace(
        workdir=settings.workdir,
        add_dirs=tuple(settings.add_dirs),
        secrets=SecretMatcher(settings.secret_patterns),
    )
    return ToolEnv(
        workspace=workspace,
        approver=approver,
        client=client,
        history=_history(settings),
        result_budget=TERMINAL_BUDGET,
    )


def entry_line(entry: Entry) -> str:
    """One write as ``filegate history`` lists it (the path escaped, SPEC §2.9)."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.time))
    if not entry.kept:
        change = f"not kept ({entry.not_kept})"
    elif entry.created:
        change = f"created, {entry.size_after} bytes"
    elif entry.removed:
        change = f"removed, was {entry.size_before} bytes"
    else:
        change = f"{entry.size_before} -> {entry.size_after} bytes"
    state = "" if entry.state == "done" else f", {entry.state}"
    about = f"{change}; {entry.route}; {escape(entry.client) or '-'}{state}"
    return f"{entry.id}  {when}  {entry.tool:<14} {escape(entry.path)}  ({about})"


def history_lines(entries: list[Entry]) -> list[str]:
    """Each write on its line; a set (ApplyPatch, an undone set) as one entry, by its id, with
    its files (SPEC §10)."""
    out: list[str] = []
    sets: dict[str, list[Entry]] = {}
    for entry in entries:
        if entry.group:
            if entry.group not in sets:
                sets[entry.group] = []
                out.append(entry.group)  # its place: where its first file is
            sets[entry.group].append(entry)
        else:
            out.append(entry_line(entry))
    return [set_line(sets[item]) if item in sets else item for item in out]


def set_line(members: list[Entry]) -> str:
    """A set as ``filegate history`` lists it: its id, time, tool, and each file's change."""
    first = members[0]
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(first.time))
    files = "; ".join(f"{escape(e.path)} ({_change(e)})" for e in members)
    state = "" if first.state == "done" else f", {first.state}"
    about = f"{first.route}; {escape(first.client) or '-'}{state}"
    return f"{first.group}  {when}  {first.tool:<14} set of {len(members)} files: {files}  ({about})"


def _change(entry: Entry) -> str:
    if entry.created:
        return f"created, {entry.size_after} bytes"
    if entry.removed:
        return f"removed, was {entry.size_before} bytes"
    return f"{entry.size_before} -> {entry.size_after} bytes"


def list_history(path: str | None, since: float | None) -> list[Entry]:
    entries = _history().entries()
    if path is not None:
        real = os.path.realpath(path)
        entries = [e for e in entries if e.path == real or e.path.startswith(real.rstrip(os.sep) + os.sep)]
    if since is not None:
        entries = [e for e in entries if e.time >= since]
    return entries


class TerminalApprover:
    """The user at the terminal: the question printed (the diff), then y/N unless ``yes``."""

    def __init__(self, yes: bool) -> None:
        self.yes = yes

    def settle(self, request: WriteRequest) -> Decision | None:
        return None  # always described: the diff is shown even with --yes

    async def ask(self, request: WriteRequest) -> Decision:
        from filegate.server.questions import approval_message

        print(approval_message(request))
        if self.yes:
            return Decision(True, "terminal")
        if not sys.stdin.isatty():
            return Decision(False, "terminal", NO_TERMINAL)
        answer = ""
        try:
            answer = (
                input(f"Undo {'these writes' if request.title else 'this write'}? [y/N] ").strip().lower()
            )
        except EOFError:  # the input ended (Ctrl-D): no answer, so no
            print()
        if answer in ("y", "yes"):
            return Decision(True, "terminal")
        return Decision(False, "terminal", "Not undone: the answer was not yes.")


NO_TERMINAL = "Not undone: there is no terminal to ask; add --yes to undo it without asking."


# `filegate undo` takes a unique prefix of an id's digits, this many at least (SPEC §8.4).
MIN_PREFIX = 6
# Ids named when a prefix matches several writes, at most.
MAX_NAMED = 5


class UnknownId(Exception):
    """What the terminal says when ``filegate undo ID`` names no one write."""


def find_write(history: WriteHistory, given: str) -> Entry:
    """The write a terminal's id names: a whole id, or a unique prefix of at least six of its
    hex digits, with or without `w-`, in either case (SPEC §8.4). The user at the terminal sees
    every write the state directory holds; a tool sees its workspace's only, by whole ids."""
    text = given.strip().lower()
    digits = text.removeprefix("w-")
    if len(digits) < MIN_PREFIX or len(digits) > 16 or any(c not in "0123456789abcdef" for c in digits):
        raise UnknownId(
            f"`{escape(given.strip()[:40])}` is not a write id: give the id a write's message ended with "
            f"(w- and 16 hex digits), or at least its first {MIN_PREFIX} digits."
        )
    matches = [i for i in history.ids() if i.removeprefix("w-").startswith(digits)]
    entry = history.find(matches[0]) if len(matches) == 1 else None
    if entry is not None:
        return entry
    if len(matches) > 1:
        named = ", ".join(matches[-MAX_NAMED:])
        more = f" and {len(matches) - MAX_NAMED} more" if len(matches) > MAX_NAMED else ""
        raise UnknownId(f"{len(matches)} writes have ids starting {digits}: {named}{more}. Give more digits.")
    if history.evicted(f"w-{digits}"):
        raise UnknownId(
            f"Write w-{digits} was evicted from the history (older than --history-max-age, or "
            "beyond --history-max-bytes), so it can no longer be undone."
        )
    raise UnknownId(f"No write w-{digits} in the history (`filegate history` lists them).")


async def undo(write_id: str | None, yes: bool, force: bool, since: str | None = None) -> tuple[bool, str]:
    """Undo the write ``write_id`` names (:func:`find_write`), or every write from the one
    ``since`` names on, through UndoWrite's own route;
    (succeeded, the message)."""
    from filegate.tools.outcome import answer
    from filegate.tools.undo_write import UndoWriteParams, undo_entry, undo_write

    env = terminal_env(TerminalApprover(yes), "filegate undo")
    assert env.history is not None  # terminal_env always opens it
    try:
        entry = await asyncio.to_thread(find_write, env.history, write_id or since or "")
    except UnknownId as exc:
        return False, str(exc)
    if since is not None:  # the rewind: the tool's own route from the write found
        params = UndoWriteParams(since=entry.id, force=force)
        outcome = await answer(undo_write, params, env)
    else:
        outcome = await answer(lambda _, e: undo_entry(entry, e, force=force), None, env)
    write_id = f"Write id: {outcome.write_id}." if outcome.write_id else ""
    lines = [outcome.message, outcome.output, write_id, outcome.next_step]
    text = "\n".join(line for line in lines if line)
    text = text.replace("`force: true`", "`--force`")  # the terminal's spelling
    return not outcome.is_error, text


def main(argv: Sequence[str]) -> int:
    """``filegate history ...`` (argv[0] == "history") or ``filegate undo ...``."""
    command, args = argv[0], argv[1:]
    if command == "history":
        p = ArgumentParser(
            prog="filegate history", description="List the writes filegate kept (oldest first)."
        )
        p.add_argument("--path", metavar="P", help="only writes to this file (or under this directory)")
        p.add_argument(
            "--since", metavar="T", type=parse_since, help="only since T: 2026-11-27T14:00, or 2h, 3d"
        )
        ns = p.parse_args(args)
        entries = list_history(ns.path, ns.since)
        for line in history_lines(entries):
            print(line)
        if not entries:
            where = shown_home_relative(history_dir())
            what = "No write matches" if ns.path is not None or ns.since is not None else "No writes"
            # On stderr: what is listed on stdout stays one write a line for a pipe.
            sys.stderr.write(f"{what} in the write history, kept in {where}.\n")
        return 0
    p = ArgumentParser(prog="filegate undo", description="Put a file back as it was before one write.")
    p.add_argument(
        "write_id",
        metavar="ID",
        nargs="?",
        help="the write's id as its message or history says, or its first 6+ digits",
    )
    p.add_argument(
        "--since",
        metavar="ID",
        help="instead: every write from ID on to this workspace's files, as one write",
    )
    p.add_argument("--yes", action="store_true", help="do not ask (the diff is still shown)")
    p.add_argument("--force", action="store_true", help="undo even if the file changed since that write")
    ns = p.parse_args(args)
    if (ns.write_id is None) == (ns.since is None):
        p.error("give a write's ID, or --since ID")
    ok, message = asyncio.run(undo(ns.write_id, ns.yes, ns.force, ns.since))
    (sys.stdout if ok else sys.stderr).write(message + "\n")
    return 0 if ok else 1
