"""What a client sees in tools/list: Kimi's names, parameter keys, defaults, hints."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import connect

READ_TOOLS = {"ReadFile", "Glob", "Grep"}


async def tools_by_name(ws: Path, mode: str, **kw: object) -> dict:
    async with connect(ws, mode, **kw) as c:
        return {t.name: t for t in await c.list_tools()}


async def test_read_tools_have_kimis_names_and_hints(ws: Path, mode: str) -> None:
    tools = await tools_by_name(ws, mode)
    assert set(tools) >= READ_TOOLS
    for name in READ_TOOLS:
        ann = tools[name].annotations
        assert ann.read_only_hint is True and ann.open_world_hint is False
    for name in {"WriteFile", "StrReplaceFile", "UndoWrite"} & set(tools):
        assert tools[name].annotations.destructive_hint is True


async def test_grep_schema_uses_kimis_json_keys(ws: Path, mode: str) -> None:
    schema = (await tools_by_name(ws, mode))["Grep"].input_schema
    props = schema["properties"]
    assert {"-A", "-B", "-C", "-n", "-i"} <= set(props)
    assert props["-n"]["default"] is True and props["-i"]["default"] is False
    assert props["head_limit"]["default"] == 250 and props["offset"]["default"] == 0
    assert props["output_mode"]["enum"] == ["content", "files_with_matches", "count_matches"]
    assert schema["required"] == ["pattern"] and schema["additionalProperties"] is False


async def test_read_file_schema_defaults_and_no_titles(ws: Path, mode: str) -> None:
    schema = (await tools_by_name(ws, mode))["ReadFile"].input_schema
    assert schema["properties"]["line_offset"]["default"] == 1
    assert schema["properties"]["n_lines"] == {
        "default": 1000, "description": "The number of lines to read. At most 1000 are returned.",
        "minimum": 1, "type": "integer",
    }  # fmt: skip
    assert "title" not in str(schema) and "$ref" not in str(schema)


async def test_descriptions_stay_short(ws: Path, mode: str) -> None:
    tools = await tools_by_name(ws, mode)
    # ~4 characters a token: each well under 1,000 tokens, all under 4,000
    sizes = {n: len(t.description) + len(str(t.input_schema)) for n, t in tools.items()}
    assert all(size < 3000 for size in sizes.values()), sizes
    assert sum(sizes.values()) < 16000, sizes


async def test_read_only_mode_offers_no_write_tools(ws: Path, mode: str) -> None:
    tools = await tools_by_name(ws, mode, read_only=True)
    assert not {"WriteFile", "StrReplaceFile", "UndoWrite"} & set(tools)
    assert set(tools) >= READ_TOOLS
