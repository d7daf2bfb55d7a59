"""Grep: ripgrep over the workspace, confined, secret-safe, paged (SPEC §4 Grep).

One pass, top to bottom (:func:`grep`):

1. ``params``  — the caller's arguments (GrepParams) and the target they name, checked and
   opened (resolve_target): a directory is pinned by its fd, a single file is rg's stdin.
2. ``walk`` → ``plan`` — for a directory: a walk of the tree (remembered per tree, so a
   repeated search stats its directories instead of listing them) vets each `.gitignore` rg
   may read itself and finds the files that may hold secrets; the plan turns that into rg's
   ignore flags and one rules file (the rules themselves: tools/search/ignores.py, shared with Glob).
3. ``rg`` — rg's command line, started in its Landlock sandbox (``sandbox``) where there is
   one, under its memory cap and timeout; its output read by a worker thread and fed to
4. ``parse`` — which checks every named file (secrets dropped, names escaped) as it comes;
   ``result`` pages the rows (offset, head_limit) and fits them to the client's budget, with
   the sentences that say what was left out. rg's own refusals are worded in ``rg``.
"""

from __future__ import annotations

import os

import anyio

from filegate.policy.escape import escape
from filegate.tools.describe import load_description
from filegate.tools.grep import plan
from filegate.tools.grep.params import HEAD_LIMIT, GrepParams, Target, resolve_target
from filegate.tools.grep.parse import Parser
from filegate.tools.grep.plan import IgnorePlan
from filegate.tools.grep.result import result, spawn_failure, unsearched
from filegate.tools.grep.rg import find_rg, refusal, rg_args, run_rg, sensitive_in_scope
from filegate.tools.grep.walk import Secrets
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec


async def grep(params: GrepParams, env: ToolEnv) -> Outcome:
    exe = find_rg()
    if exe is None:
        return Outcome.error(
            "Failed to grep. Error: ripgrep (rg) is not installed beside filegate; reinstall "
            "filegate (it depends on the `ripgrep` wheel)."
        )
    target = resolve_target(params, env)  # 1. params
    ignores: IgnorePlan | None = None
    try:
        if target.single_file and target.sensitive:  # not searched: nothing said depends on it
            return unsearched(params, target, env)
        if not target.single_file:
            ignores = await _plan(params, target, env)  # 2. walk -> plan
        parser = Parser(params, target, env)
        args = rg_args(exe, params, target, ignores.args if ignores else ())  # 3. rg
        pass_fds = [ignores.fd] if ignores and ignores.fd is not None else []
        temp = [ignores.temp] if ignores and ignores.temp else []
        try:
            run = await run_rg(args, target, env, parser, pass_fds, temp)
        except OSError as exc:  # rg could not be started
            return Outcome.error(spawn_failure(exc))
        if run.output.empty and (refused := refusal(run, params)) is not None:
            return refused
        parsed = await anyio.to_thread.run_sync(parser.finish, run.output.chunks, run.output.overflow)  # 4.
        in_scope = await sensitive_in_scope(exe, params, ignores.sensitive) if ignores else []
        secrets, parsed.hidden, parsed.rule_sources = env.workspace.secrets.hidden_apart(
            f"{target.cwd}/{rel}" for rel in in_scope
        )
        parsed.skipped = [escape(path.rsplit("/", 1)[-1]) for path in secrets]
        return result(parsed, params, env, run, ignores.unsafe if ignores else 0)
    finally:
        target.close()
        if ignores is not None:
            ignores.close()


async def _plan(params: GrepParams, target: Target, env: ToolEnv) -> IgnorePlan:
    """The ignore flags of a walk of the searched directory, made in a thread. The walk is not
    abandoned when the call is cancelled (its own budget bounds it): the plan comes back and
    the caller closes its rules file."""
    matcher = env.workspace.secrets
    client = matcher.client
    for walk in range(2):
        # Client rules (SPEC §8.5) judge a file's whole path where one could hide it; a remembered walk is
        # reused only while no rule file it knows changed, and a walk that met a new or changed
        # rule file is done again under the new fingerprint (its remembered parts were judged
        # without it). The second walk is a fresh one: it is used whatever changes meanwhile.
        before = client.fingerprint() if client is not None else 0
        key = hash((matcher.patterns, before))
        may_hide = client.may_hide_in if client is not None else None
        secrets = Secrets(str(target.cwd), matcher.is_sensitive, key, matcher.patterns, may_hide)
        made = await anyio.to_thread.run_sync(
            plan.plan, os.dup(target.fd), target.cwd, env.workspace.dirs, secrets, params.include_ignored
        )
        if walk == 1 or client is None or client.fingerprint() == before:
            return made
        made.close()
    raise AssertionError("unreachable: the second walk is always returned")


SPEC = ToolSpec(
    name="Grep",
    title="Search file contents",
    description=load_description("grep", HEAD_LIMIT=HEAD_LIMIT),
    params=GrepParams,
    handler=grep,
    read_only=True,
)
