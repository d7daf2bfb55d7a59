"""Tool descriptions: a Markdown file beside each tool, with its limits filled in."""

from __future__ import annotations

from importlib.resources import files
from string import Template
from typing import Annotated

from pydantic import Field

# SPEC §11: the write tools' optional `grant`, one short sentence (every turn pays for it).
GrantArg = Annotated[str, Field(description="A handle from an earlier result's `Grant:` line.")]


def path_help(verb: str) -> str:
    """The `path` parameter's description (SPEC §9: short, said once)."""
    return f"The file to {verb}: absolute, or relative to the working directory."


def load_description(name: str, **limits: object) -> str:
    """``name.md`` next to the tool modules, with ``${VAR}`` replaced (unknown ones kept)."""
    text = files("filegate.tools").joinpath(f"{name}.md").read_text(encoding="utf-8")
    return Template(text).safe_substitute({k: str(v) for k, v in limits.items()}).strip()
