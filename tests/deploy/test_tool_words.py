"""Every place that describes filegate names its tools as tools/list does, and none counts them
(a new tool must not leave "six tools" behind): the README, `filegate --help`, pyproject.toml,
server.json and the Claude Desktop bundle's manifest."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import anyio
import pytest

from filegate.cli import build_parser
from filegate.server.app import build_server
from filegate.settings import Settings
from tests.test_mcpb import build_script

ROOT = Path(__file__).resolve().parents[2]
# "six tools", "7 file tools", "Kimi CLI's six": a count of the tools, in words or digits.
COUNTED = re.compile(
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|\d+)\s+(?:file\s+)?tools\b"
    r"|\bKimi(?: CLI)?'s (?:one|two|three|four|five|six|seven|eight|nine|ten)\b",
    re.IGNORECASE,
)


@pytest.fixture(scope="module")
def offered() -> list[str]:
    async def names() -> list[str]:
        return [t.name for t in await build_server(Settings(workdir=ROOT)).list_tools()]

    return anyio.run(names)


def places() -> dict[str, str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    manifest = build_script().manifest(["3.11"], "linux", [{"name": "X", "description": "Y."}])
    return {
        "README.md": (ROOT / "README.md").read_text(),
        "filegate --help": build_parser().format_help(),
        "pyproject.toml": pyproject["description"],
        "server.json": json.loads((ROOT / "server.json").read_text())["description"],
        "manifest": f"{manifest['description']} {manifest['long_description']}",
    }


@pytest.mark.parametrize("place", sorted(places()))
def test_no_description_counts_the_tools(place: str) -> None:
    found = COUNTED.search(places()[place])
    assert found is None, f"{place} counts the tools: {found[0] if found else ''!r}"


def test_the_count_check_can_fail() -> None:
    for said in ("Kimi CLI's six file tools", "the 7 tools", "Seven tools over one folder"):
        assert COUNTED.search(said), said


def test_the_readme_tools_table_names_every_tool_the_server_offers(offered: list[str]) -> None:
    readme = (ROOT / "README.md").read_text()
    table = readme.split("\n## The tools\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Za-z]+)\(", table, flags=re.M)
    assert rows == offered


def test_the_manifest_lists_every_tool_the_server_offers(offered: list[str]) -> None:
    assert [t["name"] for t in build_script().manifest(["3.11"], "linux")["tools"]] == offered
