"""docs/CONFIGURATION.md's flag table is the parser's help: one text for `filegate --help` and
the docs (the README links to it)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def flags_table() -> Any:
    spec = importlib.util.spec_from_file_location("flags_table", REPO / "scripts" / "flags_table.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_flag_table_is_the_one_made_from_the_parser() -> None:
    made = flags_table()
    shown = made.in_readme((REPO / "docs" / "CONFIGURATION.md").read_text())
    assert shown == made.table(), (
        "docs/CONFIGURATION.md's flag table differs: python scripts/flags_table.py --write"
    )
    assert "(docs/CONFIGURATION.md#flags)" in (REPO / "README.md").read_text()


def test_every_server_flag_has_a_row_that_says_what_help_says() -> None:
    """Each row: the flag, the default and the meaning `filegate --help` prints (unwrapped)."""
    from filegate.cli import build_parser

    made = flags_table()
    help_text = " ".join(build_parser().format_help().split())
    rows = made.table().splitlines()[3:-1]
    assert len(rows) == len(made.server_actions()) >= 20
    for action, row in zip(made.server_actions(), rows, strict=True):
        flag, default, meaning = (c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", row)[1:-1])
        long = next(s for s in action.option_strings if s.startswith("--"))
        assert flag.startswith(f"`{long}"), row
        assert " ".join(action.help.split()) in help_text, long
        said = f"{meaning} (default: {default})" if default != "—" else meaning
        assert said == action.help, long


def test_the_table_check_can_fail(tmp_path: Path) -> None:
    """A README whose table says something else is caught, and --write puts the parser's back."""
    made = flags_table()
    readme = tmp_path / "README.md"
    readme.write_text((REPO / "docs" / "CONFIGURATION.md").read_text().replace("| 2048 |", "| 4096 |"))
    assert made.in_readme(readme.read_text()) != made.table()
    done = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO / 'scripts')!r}); import flags_table as t;"
         f" from pathlib import Path; t.README = Path({str(readme)!r}); t.main(['x', '--write'])"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert made.in_readme(readme.read_text()) == made.table()
