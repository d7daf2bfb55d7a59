"""docs/CONFIGURATION.md's flag table, made from the parser that `filegate --help` prints.

    python scripts/flags_table.py            # print the table
    python scripts/flags_table.py --write    # put it into docs/CONFIGURATION.md, between its markers

Each flag's help is "what it does (default: X)" (filegate.flags.add_server_flags): the
meaning and default columns are those two parts, so the docs and `--help` cannot say
different things; tests/test_flags_table.py fails when the doc holds another table.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from filegate.flags import add_server_flags

README = Path(__file__).resolve().parents[1] / "docs" / "CONFIGURATION.md"
BEGIN = "<!-- flags: made by scripts/flags_table.py from `filegate --help`; edit the help, not this -->\n"
END = "<!-- /flags -->\n"
DEFAULT = re.compile(r"\s*\(default: ([^)]*)\)$")


def server_actions() -> list[argparse.Action]:
    parser = argparse.ArgumentParser(add_help=False)
    add_server_flags(parser)
    return [a for a in parser._actions if a.option_strings]


def spelling(action: argparse.Action) -> str:
    long = [s for s in action.option_strings if s.startswith("--")]
    if isinstance(action, argparse.BooleanOptionalAction):
        return " / ".join(f"`{s}`" for s in long)
    value = "\\|".join(action.choices) if action.choices else action.metavar or action.dest.upper()
    return f"`{long[0]} {value}`"


def row(action: argparse.Action) -> str:
    text = action.help or ""
    found = DEFAULT.search(text)
    default = found[1] if found else "—"
    meaning = DEFAULT.sub("", text).replace("|", "\\|")
    return f"| {spelling(action)} | {default} | {meaning} |"


def table() -> str:
    lines = ["| flag | default | meaning |", "|---|---|---|", *(row(a) for a in server_actions())]
    return BEGIN + "\n".join(lines) + "\n" + END


def in_readme(text: str) -> str:
    """The table the doc holds now (between the markers)."""
    start = text.index(BEGIN)
    return text[start : text.index(END, start) + len(END)]


def main(argv: list[str]) -> int:
    if argv[1:] == ["--write"]:
        text = README.read_text()
        README.write_text(text.replace(in_readme(text), table()))
    else:
        sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
