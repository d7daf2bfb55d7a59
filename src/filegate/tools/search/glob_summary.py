"""Glob's summary sentence and its fitting to the client's budget (SPEC §4 Glob, §8.7 paging).

Paging has Grep's semantics: ``offset`` matches are passed over, then at most ``head_limit``
are kept (never more than Glob's cap); the walk's order is fixed for an unchanged tree, so
pages neither repeat nor skip a name. A result that stops short, at the cap or at the client's
budget, names the ``offset`` of the next page.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from filegate.policy.secrets import skipped_secrets_warning
from filegate.policy.workspace import abbreviate


@dataclass(frozen=True, slots=True)
class WalkReport:
    """What a walk found, as the summary tells it."""

    found: int  # matches kept
    more: bool  # the walk stopped at the cap with more to find
    offset: int = 0
    cap: int = 1000
    paged: bool = False  # the caller passed head_limit or offset
    passed: int = 0  # matches passed over for the offset
    timed_out: bool = False
    unreadable: int = 0
    ignored: int = 0
    skipped: list[str] = field(default_factory=list)  # sensitive names left out
    hidden: int = 0  # files a client rule hides, left out (counted, never named)
    rule_sources: list[str] = field(default_factory=list)  # client rule files that hid some (shown)
    budget_s: float = 20.0


def summary(report: WalkReport, pattern: str, shown: int) -> str:
    n, o = report.found, report.offset
    quoted = abbreviate(pattern)  # escaped there, once
    if not report.paged:
        msg = _unpaged(report, quoted)
    elif n == 0 and o > 0 and report.passed < o:
        msg = f"No matches at offset {o} for pattern `{quoted}`: there are {report.passed} in total."
    elif report.more:
        msg = f"Results truncated to {n} matches from offset {o} for pattern `{quoted}`."
    elif n:
        msg = f"Found {n} matches for pattern `{quoted}` from offset {o} (total: {o + n})."
    else:
        msg = f"No matches found for pattern `{quoted}`."
    if shown < n:
        msg += (f" Only the first {shown} of these {n} are listed: the rest ({n - shown}) would not "
                "fit in the client's result size limit. Use a more specific pattern or "
                "`directory` to see them.")  # fmt: skip
    if report.more or shown < n:
        msg += f" Use offset={o + shown} to see more."
    if report.timed_out:
        msg += f" The search stopped after {report.budget_s:.0f}s; results are partial."
    if report.unreadable:
        msg += f" {report.unreadable} unreadable director{'y' if report.unreadable == 1 else 'ies'} skipped."
    if report.ignored:
        msg += (f" {report.ignored} path(s) ignored by .gitignore were not searched "
                "(include_ignored=true searches them).")  # fmt: skip
    if report.skipped or report.hidden:
        skipped = (abbreviate(s) for s in report.skipped)
        msg += " " + skipped_secrets_warning(skipped, report.rule_sources, report.hidden)
    return msg


def _unpaged(report: WalkReport, quoted: str) -> str:
    """Kimi's sentences for a call without head_limit or offset."""
    if report.more:
        return (f"Found more than {report.cap} matches for pattern `{quoted}`. Only the "
                f"first {report.cap} matches are returned. You may want to use a more specific "
                "pattern.")  # fmt: skip
    if report.found:
        return f"Found {report.found} matches for pattern `{quoted}`."
    return f"No matches found for pattern `{quoted}`."


def fit(lines: list[str], report: WalkReport, pattern: str, budget: int) -> tuple[list[str], str]:
    """As many whole lines as fit in ``budget`` characters next to the summary (SPEC §4); each
    of the two text blocks ends with a line break (server/render.py)."""
    total = sum(len(s) for s in lines) + max(len(lines) - 1, 0) + 2
    msg = summary(report, pattern, len(lines))
    if total + len(msg) <= budget:
        return lines, msg
    # The summary grows by one sentence when lines are left out; make room for it first.
    room = budget - len(summary(report, pattern, 0)) - 40
    kept = 0
    used = 0
    for s in lines:
        used += len(s) + (1 if kept else 0)
        if used > room:
            break
        kept += 1
    return lines[:kept], summary(report, pattern, kept)
