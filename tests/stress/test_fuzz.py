"""Fuzzing every tool's JSON arguments through the MCP layer (hypothesis).

Each example is one ``tools/call`` from a real fastmcp client to a real server, in both protocol
eras: wrong types, missing and unknown keys, huge and negative numbers, odd Unicode (lone
surrogates, NUL, RTL marks, combining characters), enormous strings. Every call must come back
as a result or a clean isError with a message: never a raised protocol error, never traceback
text, never a masked crash ("Error calling tool"), never a hang (each call has a time limit).
The server is confined with auto approval, so writes land only inside its workspace; a
directory beside it is checked unchanged at the end.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from fastmcp import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import connect
from tests.security.attack import result_payload, snapshot

# Examples per tool and era: the default run, and the slow variant.
EXAMPLES = 25
SLOW_EXAMPLES = 600
# Hang guard per call (the longest documented limit is Grep's 20 s timeout).
CALL_LIMIT_S = 60.0
CRASH_SIGNS = ("Traceback", 'File "/', "Error calling tool", "Internal error")

COUNTS: dict[str, int] = {}

# --- strategies ---------------------------------------------------------------------------

odd_chars = st.sampled_from(
    [
        "\x00",
        "\ud800",
        "\udfff",
        "\u202e",
        "\u200b",
        "\ufeff",
        "\u0301",
        "\uffff",
        "\U0010ffff",
        "\n",
        "\r\n",
        "\t",
        "\\",
        "/",
        "..",
        "~",
        "*",
        "**",
        "{",
        "}",
        "[",
        "]",
        "!",
        "-",
        "--",
        "%",
        "\u2025",
        "\uff0e",
        "é",
        "e\u0301",
        "🙂",
        " ",
    ]
)
odd_text = st.lists(st.one_of(odd_chars, st.text(max_size=8)), max_size=12).map("".join)
enormous = st.builds(lambda s, n: s * n, st.sampled_from(["a", "é", "\n", "x\ny\r\n", "🙂", "/.."]),
                     st.integers(1_000, 400_000))  # fmt: skip
strings = st.one_of(st.text(max_size=40), odd_chars, odd_text, enormous)
paths = st.one_of(
    strings,
    st.sampled_from(
        [
            "",
            ".",
            "..",
            "/",
            "~",
            "~root",
            "a.txt",
            "sub",
            "sub/b.md",
            "/etc/passwd",
            "/dev/zero",
            "/proc/self/environ",
            "../outside/x",
            ".env",
            "nope/../a.txt",
        ]
    ),
)
huge_ints = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, -1, 1, -1000, -1001, 2**31, 2**63, -(2**63), 10**30]),
    st.integers(-3, 3),
)
scalars = st.one_of(
    st.none(), st.booleans(), huge_ints, st.floats(allow_nan=False, allow_infinity=False), strings
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=8,
)


def maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A well-typed value most of the time, anything at all otherwise."""
    return st.one_of(value, value, json_values)


def args_for(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Some of the tool's own keys (each maybe ill-typed), sometimes a key it does not know."""
    own = st.fixed_dictionaries({}, optional={k: maybe(v) for k, v in fields.items()})
    extra = st.dictionaries(
        st.sampled_from(["old_string", "file_path", "limit", "", "x" * 300]), json_values, max_size=1
    )
    return st.builds(lambda a, b: {**a, **b}, own, st.one_of(st.just({}), st.just({}), extra))


edits = st.fixed_dictionaries(
    {"old": maybe(strings), "new": maybe(strings)}, optional={"replace_all": maybe(st.booleans())}
)
TOOLS: dict[str, st.SearchStrategy[dict[str, Any]]] = {
    "ReadFile": args_for({"path": paths, "line_offset": huge_ints, "n_lines": huge_ints}),
    "ReadMediaFile": args_for({"path": paths}),
    "WriteFile": args_for(
        {
            "path": paths,
            "content": strings,
            "mode": st.sampled_from(["overwrite", "append", "x"]),
            "create_dirs": st.booleans(),
        }
    ),
    "StrReplaceFile": args_for({"path": paths, "edit": st.one_of(edits, st.lists(edits, max_size=5))}),
    "Glob": args_for(
        {
            "pattern": st.one_of(strings, st.sampled_from(["*", "**/*", "{a,b}/*", "[", "../*"])),
            "directory": paths,
            "include_dirs": st.booleans(),
        }
    ),
    "Grep": args_for(
        {
            "pattern": st.one_of(strings, st.sampled_from(["(", "a{99999}", ".", "\\", "[[:alpha:]]"])),
            "path": paths,
            "glob": strings,
            "output_mode": st.sampled_from(["content", "files_with_matches", "count_matches", "lines"]),
            "-B": huge_ints,
            "-A": huge_ints,
            "-C": huge_ints,
            "-n": st.booleans(),
            "-i": st.booleans(),
            "type": strings,
            "head_limit": huge_ints,
            "offset": huge_ints,
            "multiline": st.booleans(),
            "include_ignored": st.booleans(),
        }
    ),
}

# --- one server per era, driven from hypothesis's synchronous examples ---------------------


def _workspace(base: Path) -> Path:
    ws = base / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.txt").write_text("alpha\nbeta\ngamma\n" * 50)
    (ws / "sub" / "b.md").write_text("# title\nbody é 🙂\r\n")
    (ws / ".env").write_text("SECRET=1\n")
    (base / "outside").mkdir()
    (base / "outside" / "x").write_text("outside\n")
    return ws


@pytest.fixture(scope="module", params=["auto", "legacy"])
def fuzz_target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[BlockingPortal, Client[Any]]]:
    base = Path(os.path.realpath(tmp_path_factory.mktemp(f"fuzz-{request.param}")))
    ws = _workspace(base)
    before = snapshot(base / "outside")
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(
            connect(ws, request.param, confine=True, approval="auto")
        ) as client,
    ):
        yield portal, client
    assert snapshot(base / "outside") == before


def check_one_call(target: tuple[BlockingPortal, Client[Any]], tool: str, args: dict[str, Any]) -> None:
    portal, client = target

    async def go() -> Any:
        return await client.call_tool(tool, args, raise_on_error=False, timeout=CALL_LIMIT_S)

    result = portal.call(go)  # a protocol error or a timeout raises here and fails the example
    COUNTS[tool] = COUNTS.get(tool, 0) + 1
    payload = result_payload(result)
    crash = [s for s in CRASH_SIGNS if s in payload]
    assert not crash, f"{tool}({_short(args)}) -> {payload[:400]}"
    if result.is_error:
        assert payload.strip(), f"{tool}({_short(args)}): an error without a message"


def _short(args: dict[str, Any]) -> str:
    text = repr(args)
    return text if len(text) < 300 else text[:297] + "..."


def _fuzz(target: tuple[BlockingPortal, Client[Any]], tool: str, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,  # no .hypothesis directory in the repository
        derandomize=True,  # the default run is the same every time (CI); -m slow explores further
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(TOOLS[tool])
    def check(args: dict[str, Any]) -> None:
        check_one_call(target, tool, args)

    check()


@pytest.mark.parametrize("tool", list(TOOLS))
@pytest.mark.slow
def test_fuzzed_arguments_give_a_result_or_a_clean_error(
    fuzz_target: tuple[BlockingPortal, Client[Any]], tool: str
) -> None:
    _fuzz(fuzz_target, tool, EXAMPLES)


@pytest.mark.slow
@pytest.mark.parametrize("tool", list(TOOLS))
def test_fuzzed_arguments_at_length(fuzz_target: tuple[BlockingPortal, Client[Any]], tool: str) -> None:
    @settings(
        max_examples=SLOW_EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )
    @given(TOOLS[tool])
    def check(args: dict[str, Any]) -> None:
        check_one_call(fuzz_target, tool, args)

    check()
    print(f"\nfuzz calls so far: {COUNTS}")
