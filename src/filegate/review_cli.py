"""``filegate changes`` (SPEC §10 Review): Changes from a terminal, over the workspace of the
current folder, through the tool's own code; what it prints is the tool's answer."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from filegate.flags import ArgumentParser
from filegate.history_cli import UnknownId, find_write, terminal_env
from filegate.tools.outcome import Decision, WriteRequest


class ReadOnly:
    """The approver of a command that writes nothing: any write it were to ask about is refused."""

    def settle(self, request: WriteRequest) -> Decision | None:
        return Decision(False, "terminal", "This command writes nothing.")

    async def ask(self, request: WriteRequest) -> Decision:
        return Decision(False, "terminal", "This command writes nothing.")


async def changes(since: str, path: str | None, against: str) -> tuple[bool, str]:
    from filegate.tools.changes import ChangesParams
    from filegate.tools.changes import changes as run
    from filegate.tools.outcome import answer

    env = terminal_env(ReadOnly(), "filegate changes")
    if since.strip().lower().startswith("w-") and env.history is not None:
        try:  # the terminal takes a unique prefix of 6 digits or more (SPEC §8.4)
            since = (await asyncio.to_thread(find_write, env.history, since)).id
        except UnknownId as exc:
            return False, str(exc)
    params = ChangesParams.model_validate({"since": since, "path": path, "against": against})
    outcome = await answer(run, params, env)
    text = "\n\n".join(part for part in (outcome.output, outcome.message) if part)
    return not outcome.is_error, text


def main(argv: Sequence[str]) -> int:
    """``filegate changes ...`` (argv[0] == "changes")."""
    p = ArgumentParser(
        prog="filegate changes",
        description="The files in this folder's workspace written through filegate since a point, "
        "with one diff.",
    )
    p.add_argument(
        "--since",
        metavar="ID|TIME",
        default="",
        help="a write id, an ISO 8601 time (2026-11-27T14:00) or an age (2h, 3d); default: the whole history",
    )
    p.add_argument("--path", metavar="P", help="only this file, or the files under this folder")
    p.add_argument(
        "--against", choices=["history", "HEAD"], default="history", help="diff against git's HEAD instead"
    )
    ns = p.parse_args(argv[1:])
    ok, text = asyncio.run(changes(ns.since, ns.path, ns.against))
    (sys.stdout if ok else sys.stderr).write(text + "\n")
    return 0 if ok else 1
