"""Grep: ripgrep over the workspace, confined, secret-safe, paged (SPEC §4 Grep).

One pass, top to bottom (:func:`grep`):

1. ``params``  — the caller's arguments (GrepParams) and the target they name, checked and
   opened (resolve_target): a directory is pinned by its fd, a single file is rg's stdin.
2. ``walk`` → ``plan`` — for a directory: a walk of the tree (remembered per tree, so a
   repeated search stats its directories instead of listing them) vets each `.gitignore` rg
   may read itself and finds the files that may hold secrets; the plan turns that into rg's
   ignore flags and one rules file (the rules themselves: tools/ignores.py, shared with Glob).
3. ``rg`` — rg's command line, started in its Landlock sandbox (``sandbox``) where there is
   one, under its memory cap and timeout; its output read by a worker thread and fed to
4. ``parse`` — which checks every named file (secrets dropped, names escaped) as it comes;
   the rows are paged (offset, head_limit) and fitted to the client's budget here, in
   :func:`_result`, with the sentences that say what was left out.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Sequence

import anyio

from filegate.policy.escape import escape
from filegate.policy.secrets import skipped_secrets_warning
from filegate.tools.describe import load_description
from filegate.tools.grep import plan, rg
from filegate.tools.grep.params import HEAD_LIMIT, GrepParams, Target, resolve_target
from filegate.tools.grep.parse import Parsed, Parser, fit_lines, page_lines
from filegate.tools.grep.plan import IgnorePlan
from filegate.tools.grep.rg import RgOutput, RgRun, filter_args, find_rg, rg_args, run_rg
from filegate.tools.grep.walk import Secrets
from filegate.tools.outcome import Outcome, ToolEnv, ToolSpec

# Kimi's grep_local.py: the longest output (the client's budget may be smaller).
MAX_OUTPUT_CHARS = 50_000
# Linux's MAX_ARG_STRLEN: the longest single command-line argument exec accepts (E2BIG beyond).
MAX_ARG_BYTES = 128 << 10


def _unreadable(stderr: bytes) -> int:
    """How many entries rg could not read (one complaint per line, each starting with "rg: ")."""
    return sum(1 for line in stderr.splitlines() if line.startswith(b"rg: "))


def _failure(stderr: bytes, params: GrepParams, returncode: int | None) -> str:
    """Why rg refused to search: said from the caller's own arguments, never rg's text about a
    file (which can quote the file's lines)."""
    text = stderr.decode("utf-8", errors="replace")
    if text.startswith("rg: regex parse error:"):
        return "Failed to grep. Error: " + _regex_error(text)
    if text.startswith("rg: compiled regex exceeds size limit"):
        # About the caller's pattern only (rg says it before it opens any file).
        limit = text.strip().splitlines()[0].rsplit(" ", 1)[-1]
        return (
            f"Failed to grep. Error: the pattern is too large: its compiled regex exceeds size limit of "
            f"{limit} bytes. Use a simpler pattern (fewer or smaller repetitions)."
        )
    if text.startswith("rg: unrecognized file type:") and params.type:
        return (
            f"Failed to grep. Error: unknown file type `{escape(params.type)}` "
            "(rg --type-list names them: py, rust, js, ts, go, c, …)."
        )
    if text.startswith("rg: error parsing glob") and params.glob and params.glob in text:
        reason = text.strip().splitlines()[0].rsplit(": ", 1)[-1]
        return f"Failed to grep. Error: invalid glob `{escape(params.glob)}`: {reason}."
    n = _unreadable(stderr)
    said = f" ({_unreadable_sentence(n)})" if n else ""
    return f"Failed to grep. Error: ripgrep failed with exit status {returncode}{said}."


def _regex_error(text: str) -> str:
    """rg's regex error without the `(?:…)` it wraps every pattern in, caret moved to match."""
    lines = text.rstrip("\n").split("\n")[1:]
    out = ["regex parse error:"]
    echo = True
    for i, line in enumerate(lines):
        if line.startswith("error:"):
            out.append(line)
            echo = False
            continue
        if echo and i == 0 and line.startswith("    (?:"):
            line = "    " + line[7:]
        elif line.startswith("       ") and set(line.strip()) <= {"^"}:
            line = "    " + line[7:]  # the caret line, moved with the pattern
        out.append(line)
    # The wrapper's closing parenthesis ends the last line of the echoed pattern.
    for j in range(len(out) - 1, 0, -1):
        if out[j].startswith("    ") and not set(out[j].strip()) <= {"^"} and out[j].endswith(")"):
            out[j] = out[j][:-1]
            break
    return "\n".join(out)


def _unreadable_sentence(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''} or folder{'s' if n != 1 else ''} could not be read"


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
            return _result(_unsearched(params, target, env), params, env, RgRun(RgOutput(), returncode=1), 0)
        if not target.single_file:
            ignores = await _plan(params, target, env)  # 2. walk -> plan
        parser = Parser(params, target, env)
        try:
            run = await _run(exe, params, target, env, parser, ignores)  # 3. rg
        except OSError as exc:  # rg could not be started
            return Outcome.error(_spawn_failure(exc))
        if run.output.empty and (refused := _refusal(run, params)) is not None:
            return refused
        parsed = await anyio.to_thread.run_sync(parser.finish, run.output.chunks, run.output.overflow)  # 4.
        in_scope = await _in_scope(exe, params, ignores.sensitive) if ignores else []
        parsed.skipped = [escape(rel.rsplit("/", 1)[-1]) for rel in in_scope]
        parsed.rule_sources = env.workspace.secrets.rule_sources(f"{target.cwd}/{rel}" for rel in in_scope)
        return _result(parsed, params, env, run, ignores.unsafe if ignores else 0)
    finally:
        target.close()
        if ignores is not None:
            ignores.close()


def _unsearched(params: GrepParams, target: Target, env: ToolEnv) -> Parsed:
    """The result of a single sensitive file, which is not searched: it is said to be skipped."""
    parsed = Parsed(rows=None if params.output_mode != "content" else [])
    if params.output_mode == "count_matches":
        parsed.total_matches, parsed.files = 0, 0
    parsed.skipped = [target.name.rsplit("/", 1)[-1]]  # escaped once already
    parsed.rule_sources = env.workspace.secrets.rule_sources([str(target.real)] if target.real else [])
    return parsed


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


async def _run(
    exe: str, params: GrepParams, target: Target, env: ToolEnv, parser: Parser, ignores: IgnorePlan | None
) -> RgRun:
    """One run of rg with the plan's ignore flags, its output parsed as it comes."""
    args = rg_args(exe, params, target, ignores.args if ignores else ())
    pass_fds = [ignores.fd] if ignores and ignores.fd is not None else []
    temp = [ignores.temp] if ignores and ignores.temp else []
    return await run_rg(args, target, env, parser, pass_fds, temp)


def _refusal(run: RgRun, params: GrepParams) -> Outcome | None:
    """The error of a run that gave no output: rg refused to search, or timed out."""
    if run.returncode not in (0, 1, None):
        return Outcome.error(_failure(run.stderr, params, run.returncode))
    if run.timed_out:
        return Outcome.error(
            f"Grep timed out after {rg.RG_TIMEOUT_S:g}s. Try a more specific path or pattern."
        )
    return None


async def _in_scope(exe: str, params: GrepParams, sensitive: Sequence[str]) -> list[str]:
    """The sensitive files the search would have looked at: those the caller's own ``glob`` and
    ``type`` let through (issue 24.5), all of them whether they match or not (what is said of
    them never depends on their content, SPEC §2.6). rg itself decides, with the same filters,
    over empty stand-ins of the same names in a scratch directory: explicit paths bypass rg's
    filters, and rg's glob and type rules are rg's alone."""
    if not sensitive or not (params.glob or params.type):
        return list(sensitive)
    with tempfile.TemporaryDirectory(prefix="filegate-scope-") as scratch:
        for rel in sensitive:
            stand_in = os.path.join(scratch, rel)
            os.makedirs(os.path.dirname(stand_in), exist_ok=True)
            with open(stand_in, "wb"):
                pass
        args = [exe, "--no-config", "--files", "--hidden", "--no-ignore", "--null", *filter_args(params)]
        try:
            done = await anyio.run_process([*args, "--", "."], cwd=scratch, check=False)
        except OSError:
            return list(sensitive)  # rg could not start: say every one rather than none
        if done.returncode not in (0, 1):
            return list(sensitive)
    found = {os.fsdecode(name).removeprefix("./") for name in done.stdout.split(b"\0") if name}
    return [rel for rel in sensitive if rel in found]


def _result(parsed: Parsed, params: GrepParams, env: ToolEnv, run: RgRun, unsafe_ignores: int) -> Outcome:
    total = parsed.total
    page, page_length = page_lines(parsed, params)
    notes: list[str] = []  # after the paging sentence
    if parsed.skipped:
        notes.append(skipped_secrets_warning(parsed.skipped, parsed.rule_sources))
    if unsafe_ignores:
        notes.append(
            f"{unsafe_ignores} .gitignore file(s) were not used: they are symlinks, not regular files "
            "or larger than 1 MiB"
        )
    if run.output.overflow:
        notes.append("Output exceeded buffer limit. Some results omitted.")
    if run.timed_out:
        notes.append(f"Grep timed out after {rg.RG_TIMEOUT_S:g}s. Partial results returned.")
    unreadable = _unreadable(run.stderr) if run.returncode == 2 else 0
    if unreadable:
        notes.append(_unreadable_sentence(unreadable))
    lead: list[str] = []
    if params.output_mode == "count_matches":
        lead.append(f"Found {parsed.total_matches} total occurrences across {parsed.files} files.")
    if total == 0:
        lead.insert(0, "No matches found")
    elif params.offset >= total:
        lead.insert(
            0,
            f"No results at offset {params.offset}: the search has {total} result line(s) in all, "
            f"at offsets 0 to {total - 1}",
        )
    # The output, then the summary, fit the client's budget (Kimi cuts at 100,000 characters):
    # fewer whole lines, and the summary with where to continue always whole.
    reserve = len(_join(lead + notes)) + 200  # room for the sentences still to come
    room = min(MAX_OUTPUT_CHARS, env.text_budget - reserve)
    shown, line_cut = fit_lines(page, max(room, 0))
    # Kimi's builder says so when it cut anything, a long line included (issue 24.3).
    cut = len(shown) < page_length or line_cut
    next_offset = None
    paging: list[str] = []
    if shown and params.offset + len(shown) < total:
        next_offset = params.offset + len(shown)
        paging.append(
            f"Results truncated to {len(shown)} lines (total: {total}). Use offset={next_offset} to see more."
        )
    if cut:
        paging.append("Output is truncated to fit in the message.")
    message = _join(lead + paging + notes)
    return Outcome(
        output="\n".join(shown),
        message=message,
        skipped_sensitive=len(set(parsed.skipped)),  # as the sentence counts them: by name
        timed_out=run.timed_out,
        partial=cut or run.output.overflow,
    )


def _spawn_failure(exc: OSError) -> str:
    if exc.errno == errno.E2BIG:
        return (
            "Failed to grep. Error: the pattern or glob is too long to pass to ripgrep (Linux takes "
            f"at most {MAX_ARG_BYTES // 1024} KiB per argument). Use a shorter pattern."
        )
    return f"Failed to grep. Error: ripgrep could not be started ({exc.strerror or exc})."


def _join(messages: list[str]) -> str:
    parts = [m if m.endswith(".") else m + "." for m in messages]
    return " ".join(parts)


SPEC = ToolSpec(
    name="Grep",
    title="Search file contents",
    description=load_description("grep", HEAD_LIMIT=HEAD_LIMIT),
    params=GrepParams,
    handler=grep,
    read_only=True,
)
