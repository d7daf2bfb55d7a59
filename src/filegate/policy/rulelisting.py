"""`filegate rules`: the rules users wrote for their agents that a server would honour, listed with their
sources and precedence (the user's own terminal: rules are shown here, never in a tool's result)."""

from __future__ import annotations

import os

from filegate.policy.clientrules import IGNORE_FILES, ClientRules, RuleFileError
from filegate.policy.escape import escape

SOURCE_KINDS = {
    ".cursorignore": "Cursor",
    ".geminiignore": "Gemini CLI",
    ".aiexclude": "Gemini (Android Studio)",
    ".aiignore": "JetBrains AI",
    ".codeiumignore": "Windsurf / Codeium",
}
PRECEDENCE = """\
Precedence (strictest wins; filegate's own secret list and --secret-pattern always apply too):
  1. deny Edit(...)/Write(...): every write refused, no question asked
  2. ignore files, deny Read(...): hidden for reading (ReadFile refuses; Glob and Grep leave
     it out and count it); a write to it is asked every time, with no diff
  3. ask Edit(...)/Write(...), and the rule files themselves: every write asked, whatever
     --approval says (auto included)
  4. allow Edit(...)/Write(...) in ~/.claude/settings.json only: those writes are not asked
     (never one of the above, nor a secret; --approval ask-always ignores them); allow rules
     in a workspace's .claude/ files count for nothing (a repository cannot allow itself)
An ignore file applies to its own folder's subtree; a deeper file cannot re-include ('!')
what a file above it hides. Claude Code forms: //abs, ~/home, /project-root, ./workdir, bare."""
# The listing's walk for ignore files stops past these (a huge tree is not listed whole).
LIST_MAX_DIRS = 100_000
_SKIP_DIRS = frozenset((".git", ".hg", ".svn", ".jj", "node_modules"))


def ignore_files_under(top: str, max_dirs: int = LIST_MAX_DIRS) -> tuple[list[str], bool]:
    """The AI ignore files in ``top``'s tree (no symlink followed), and whether the walk ended."""
    found: list[str] = []
    stack = [top]
    seen = 0
    while stack:
        folder = stack.pop()
        seen += 1
        if seen > max_dirs:
            return sorted(found), False
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.name in IGNORE_FILES:
                        found.append(entry.path)
                    elif entry.name not in _SKIP_DIRS and entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:
            continue
    return sorted(found), True


def describe(rules: ClientRules) -> tuple[str, int]:
    """The merged rules with their sources and precedence, for `filegate rules`; and how many
    rule files cannot be used (each fails every tool call until it is fixed)."""
    out = [PRECEDENCE, ""]
    problems: list[str] = []
    for path, shown, follow in rules.settings_files():
        try:
            read = rules.read(path, follow)
        except RuleFileError as exc:
            problems.append(f"  {shown} {exc}")
            continue
        if read is None:
            continue
        try:
            parsed = rules.parse_settings(path, shown, read[1])
        except RuleFileError as exc:
            problems.append(f"  {shown} {exc}")
            continue
        root = escape(os.path.dirname(os.path.dirname(path)))
        out.append(f"{shown} (Claude Code settings; `/` patterns relative to {root})")
        out += [f"  {r.verdict:<5}  {escape(r.text)}" for r in parsed] or ["  (no Read/Edit/Write rules)"]
    for top in rules.dirs:
        paths, complete = ignore_files_under(top)
        for path in paths:
            shown = rules.shown(path)
            try:
                read = rules.read(path, False)
            except RuleFileError as exc:
                problems.append(f"  {shown} {exc}")
                continue
            if read is None:
                continue
            kind = SOURCE_KINDS[os.path.basename(path)]
            lines = [ln for ln in read[1].decode("utf-8", "surrogateescape").splitlines() if ln.strip()]
            lines = [ln for ln in lines if not ln.lstrip().startswith("#")]
            out.append(
                f"{shown} ({kind}; hides from reading under {escape(rules.shown(os.path.dirname(path)))}/)"
            )
            out += [f"  {escape(ln)}" for ln in lines] or ["  (no rules)"]
        if not complete:
            stopped = f"the listing stopped after {LIST_MAX_DIRS} folders of {escape(top)}"
            out.append(f"({stopped}; the tools judge every path)")
    if len(out) == 2:
        out.append("No client rule file found.")
    if problems:
        out += ["", "Unusable rule files (every tool call fails until they are fixed):", *problems]
    return "\n".join(out), len(problems)
