"""What a package index or registry reads: server.json (the MCP registry) and its ties to the
package (name, version, the README line by which the registry checks ownership on PyPI)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import jsonschema
import yaml

from filegate import __version__

REPO = Path(__file__).resolve().parents[1]


def test_server_json_is_valid_against_the_registrys_schema() -> None:
    schema = json.loads((REPO / "tests/schemas/server.schema.json").read_text())
    server = json.loads((REPO / "server.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(server)]
    assert errors == []
    assert server["$schema"].endswith("/2025-12-11/server.schema.json")


def test_server_json_names_this_package_at_this_version() -> None:
    server = json.loads((REPO / "server.json").read_text())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    (package,) = server["packages"]
    assert server["version"] == package["version"] == __version__
    assert package["registryType"] == "pypi" and package["identifier"] == project["name"]
    # The registry takes a PyPI package as this server's only when its description (the README)
    # names the server: "mcp-name: <name>".
    assert f"<!-- mcp-name: {server['name']} -->" in (REPO / "README.md").read_text()
    assert [a["name"] for a in package["packageArguments"]] == ["--workdir"]


def test_an_invalid_server_json_is_caught() -> None:
    """The check above can fail: the registry's own limits (a name without its namespace, a
    description over 100 characters, a version range) are refused."""
    schema = json.loads((REPO / "tests/schemas/server.schema.json").read_text())
    server = json.loads((REPO / "server.json").read_text())
    for bad in ({"name": "filegate"}, {"description": "x" * 101}):
        assert list(jsonschema.Draft7Validator(schema).iter_errors({**server, **bad})), bad


def test_the_package_metadata_is_ready_for_pypi() -> None:
    """What a PyPI page shows beside the README: the licence file, who, where, for what."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    licence = (REPO / "LICENSE").read_text()
    assert licence.startswith("MIT License") and "filegate contributors" in licence
    assert project["authors"] == [{"name": "filegate contributors"}]
    assert "Programming Language :: Python :: 3 :: Only" in project["classifiers"]
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]  # PEP 639: the expression
    # The repository the registry name stands for (io.github.<owner>/<name>).
    owner, name = json.loads((REPO / "server.json").read_text())["name"].removeprefix("io.github.").split("/")
    repository = f"https://github.com/{owner}/{name}"
    assert project["urls"]["Source"] == repository and project["urls"]["Issues"] == f"{repository}/issues"


def test_the_sdist_leaves_out_what_test_runs_leave_behind() -> None:
    """Even from a copy of the tree without its .gitignore (tests/deploy/test_packaging.py builds
    one and looks)."""
    from tests.deploy.test_packaging import LEFTOVERS

    excluded = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["hatch"]["build"]["targets"][
        "sdist"
    ]
    assert set(LEFTOVERS) <= set(excluded["exclude"])


def test_the_classifiers_claim_only_the_systems_a_ci_job_runs_on() -> None:
    classifiers = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["classifiers"]
    claimed = {c for c in classifiers if c.startswith("Operating System :: ")}
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "test.yml").read_text())
    runners = set(workflow["jobs"]["suite"]["strategy"]["matrix"]["os"])
    of_runner = {"ubuntu-latest": "Operating System :: POSIX :: Linux", "macos-latest": "Operating System :: MacOS",
                 "windows-latest": "Operating System :: Microsoft :: Windows"}  # fmt: skip
    assert claimed == {of_runner[r] for r in runners}
