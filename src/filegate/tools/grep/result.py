"""What Grep's caller is told: the parsed rows paged (offset, head_limit) and fitted to the
client's budget, with the sentences that say what was left out and where to go on; rg's
start failure, worded; the result of a single sensitive file, which is not searched.
"""

from __future__ import annotations

import errno

from filegate.policy.secrets import skipped_secrets_warning
from filegate.tools.grep import rg
from filegate.tools.grep.params import GrepParams, Target
from filegate.tools.grep.parse import Parsed, fit_lines, page_lines
from filegate.tools.grep.rg import RgOutput, RgRun, unreadable, unreadable_sentence
from filegate.tools.outcome import Outcome, ToolEnv

# Kimi's grep_local.py: the longest output (the client's budget may be smaller).
MAX_OUTPUT_CHARS = 50_000
# Linux's MAX_ARG_STRLEN: the longest single command-line argument exec accepts (E2BIG beyond).
MAX_ARG_BYTES = 128 << 10


def unsearched(params: GrepParams, target: Target, env: ToolEnv) -> Outcome:
    """The result of a single sensitive file, which is not searched: it is said to be skipped."""
    parsed = Parsed(rows=None if params.output_mode != "content" else [])
    if params.output_mode == "count_matches":
        parsed.total_matches, parsed.files = 0, 0
    _, parsed.hidden, parsed.rule_sources = env.workspace.secrets.hidden_apart(
        [str(target.real)] if target.real else []
    )
    if parsed.hidden == 0:  # a secret: named as the caller gave it (a hidden one never is)
        parsed.skipped = [target.name.rsplit("/", 1)[-1]]  # escaped once already
    return result(parsed, params, env, RgRun(RgOutput(), returncode=1), 0)


def result(parsed: Parsed, params: GrepParams, env: ToolEnv, run: RgRun, unsafe_ignores: int) -> Outcome:
    total = parsed.total
    page, page_length = page_lines(parsed, params)
    notes: list[str] = []  # after the paging sentence
    if parsed.skipped or parsed.hidden:
        notes.append(skipped_secrets_warning(parsed.skipped, parsed.rule_sources, parsed.hidden))
    if unsafe_ignores:
        notes.append(
            f"{unsafe_ignores} .gitignore file(s) were not used: they are symlinks, not regular files "
            "or larger than 1 MiB"
        )
    if run.output.overflow:
        notes.append("Output exceeded buffer limit. Some results omitted.")
    if run.timed_out:
        notes.append(f"Grep timed out after {rg.RG_TIMEOUT_S:g}s. Partial results returned.")
    unread = unreadable(run.stderr) if run.returncode == 2 else 0
    if unread:
        notes.append(unreadable_sentence(unread))
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
        skipped_hidden=parsed.hidden,
        timed_out=run.timed_out,
        partial=cut or run.output.overflow,
    )


def spawn_failure(exc: OSError) -> str:
    if exc.errno == errno.E2BIG:
        return (
            "Failed to grep. Error: the pattern or glob is too long to pass to ripgrep (Linux takes "
            f"at most {MAX_ARG_BYTES // 1024} KiB per argument). Use a shorter pattern."
        )
    return f"Failed to grep. Error: ripgrep could not be started ({exc.strerror or exc})."


def _join(messages: list[str]) -> str:
    parts = [m if m.endswith(".") else m + "." for m in messages]
    return " ".join(parts)
