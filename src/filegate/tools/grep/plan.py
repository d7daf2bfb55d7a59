"""The ignore flags rg is given for one Grep (SPEC §4 Grep): a walk of the searched tree
(grep/walk.py) turned into rg's flags and one rules file of ours.

The files that may hold secrets are left out in rg's call itself (anchored rules in the rules
file); when the tree holds a `.gitignore` that is not a regular file of sane size (or the walk
did not finish), rg reads none itself and gets the regular ones' rules from the file too; the
`.gitignore` files of the searched directory's parents inside the workspace come the same way.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from filegate.fsio import platform
from filegate.tools.grep.walk import Secrets, TreeIgnores, walk_tree
from filegate.tools.search.ignores import IGNORE_NAME, outer_rules, read_rules, rules_at

# rg's flags for ignore files it finds on its own, whatever the tree holds. --no-require-git:
# a `.gitignore` counts whether or not a `.git` is there (SPEC §4; Glob does the same).
ALWAYS = ("--no-require-git", "--no-ignore-dot", "--no-ignore-global", "--no-ignore-exclude",
          "--no-ignore-parent", "--no-ignore-messages")  # fmt: skip


@dataclass
class IgnorePlan:
    """rg's ignore flags for one search, and the rules file they name (closed after rg ran)."""

    args: list[str]
    unsafe: int = 0  # ignore files left unread: symlinks or not regular files
    sensitive: list[str] = field(default_factory=list)  # files that may hold secrets, left out
    fd: int | None = None  # a rules file rg reads by /proc/self/fd (kept open until rg ends)
    temp: str | None = None  # the same where there is no memfd

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.temp is not None:
            os.unlink(self.temp)
            self.temp = None


def plan(
    dir_fd: int, top: Path, workspace_dirs: Iterable[Path], secrets: Secrets, include_ignored: bool
) -> IgnorePlan:
    """The ignore flags for a search of the directory ``top``, open as ``dir_fd`` (which this
    closes: a search cancelled meanwhile leaves the walk to finish on its own descriptor).

    The files that may hold secrets are left out in rg's call itself (anchored rules in the
    rules file), and are known whether or not they match: what the result says about them
    (their names, how many) cannot depend on their content."""
    by_path = not platform.has_dir_fd()  # Windows: the tree is walked and read by path
    try:
        tree = walk_tree(dir_fd, secrets, top_path=str(top) if by_path else None)
        return _plan_of(tree, dir_fd, top, workspace_dirs, include_ignored)
    finally:
        os.close(dir_fd)


def _plan_of(
    tree: TreeIgnores, dir_fd: int, top: Path, workspace_dirs: Iterable[Path], include_ignored: bool
) -> IgnorePlan:
    by_path = not platform.has_dir_fd()
    rules = [] if include_ignored else outer_rules(top, workspace_dirs)
    args = list(ALWAYS)
    if not include_ignored and (tree.unsafe or not tree.complete):
        args.append("--no-ignore-vcs")  # rg reads none itself: the regular ones come from here
        for rel in tree.regular:
            name = f"{rel}/{IGNORE_NAME}" if rel else IGNORE_NAME
            lines = read_rules(os.path.join(top, name), None) if by_path else read_rules(name, dir_fd)
            if lines:
                rules += rules_at(lines, rel)
    rules += ["/" + _glob_escape(rel) for rel in tree.sensitive]
    # rg stops reading a rules file at its first line that is not UTF-8 (a name in Latin-1):
    # such a line, which rg cannot use anyway, must not cost the lines after it.
    rules = [rule for rule in rules if _is_utf8(rule)]
    unsafe = 0 if include_ignored else tree.unsafe
    text = "\n".join(rules) + "\n" if rules else ""
    result = IgnorePlan(args, unsafe, tree.sensitive)
    if text:
        _attach_rules(result, text)
    return result


def _is_utf8(rule: str) -> bool:
    """No byte of it was undecodable (read with surrogateescape, such a byte is a lone surrogate)."""
    try:
        rule.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _glob_escape(rel: str) -> str:
    """A path as a gitignore rule that matches just it."""
    return "".join("\\" + c if c in "\\*?[]!#{}" else c for c in rel).replace(" ", "\\ ")


def _attach_rules(plan: IgnorePlan, text: str) -> None:
    data = text.encode()  # UTF-8: plan() left out every line that is not
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("filegate-grep-ignore")  # handed to rg (pass_fds), opened by number
        os.write(fd, data)
        plan.fd = fd
        plan.args += ["--ignore-file", platform.proc_fd(fd)]
        return
    with tempfile.NamedTemporaryFile("wb", prefix="filegate-grep-", suffix=".ignore", delete=False) as f:
        f.write(data)
    plan.temp = f.name
    plan.args += ["--ignore-file", f.name]
