"""The placeholder guard (SPEC §8.4): WriteFile refuses an overwrite whose content stands a
comment in for code it left out, unless the file already holds that line."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from filegate.tools.edit.placeholders import find_placeholder
from tests.conftest import call, connect, text

# The forms models write, by comment syntax (collected from the reports quoted in issue 37 and
# the usual shapes: an ellipsis, "rest of", "existing ... here", "omitted for brevity").
CORPUS = {
    "c-like": [
        "// ... rest of the code unchanged",
        "// ... existing code ...",
        "    // rest of the function remains the same",
        "/* ... */",
        "/* existing methods unchanged */",
        "// ...",
        "  // … other handlers …",
        "// code omitted for brevity",
        "{/* rest of the component */}",
        " * ... remaining cases unchanged",
        "// (previous imports unchanged)",
        "// Rest of the file stays the same",
    ],
    "python": [
        "# ... rest of the code unchanged",
        "# existing code here",
        "    # ...",
        "    # ... (previous methods unchanged)",
        "# rest of the class as before",
        "# Other tests remain unchanged ...",
        "# implementation unchanged",
        "# ... snip ...",
    ],
    "shell": [
        "# ... rest of the script unchanged",
        "# existing functions here",
        "# remainder of the file unchanged",
        "-- rest of the query unchanged",
        "; ... other rules ...",
        "% rest of the chapter unchanged",
    ],
    "html": [
        "<!-- ... -->",
        "<!-- rest of the page unchanged -->",
        "  <!-- existing sections remain unchanged -->",
        "<!-- ... other items ... -->",
        "<!-- content omitted for brevity -->",
    ],
    "markdown": [
        "[... rest of the document unchanged ...]",
        "(rest of the README unchanged)",
        "[...]",
        "<!-- previous sections unchanged -->",
        "(same as before)",
    ],
}
FORMS = [(kind, line) for kind, lines in CORPUS.items() for line in lines]

# Lines real files hold that must never trip it.
ORDINARY = [
    "def f(): ...",
    "x = y[...]",
    "class P(Protocol):\n    def run(self) -> None: ...",
    "// Rest of the function handles errors",
    "# Other functions",
    "# keep existing connections open",
    "# TODO: handle the rest of the input later",
    "# the rest of the data is read lazily",
    "## Installation",
    "<!-- markdownlint-disable MD013 -->",
    "/* eslint-disable no-console */",
    "x = 1  # rest",
    "print('... rest of the code unchanged')",
    "Some prose says the rest of the code is unchanged by this release.",
    "for (;;) { /* spin */ }",
    "-- SELECT * FROM users;",
    "#!/bin/sh",
    "// Copyright (c) 2026 The Authors",
]


@pytest.mark.parametrize(("kind", "line"), FORMS, ids=[f"{k}:{line.strip()[:30]}" for k, line in FORMS])
def test_each_placeholder_form_is_found_in_new_content(kind: str, line: str) -> None:
    new = f"first = 1\n{line}\nlast = 2\n"
    assert find_placeholder(new, "first = 1\nmiddle = 3\nlast = 2\n") == (2, line.strip())


@pytest.mark.parametrize(("kind", "line"), FORMS, ids=[f"{k}:{line.strip()[:30]}" for k, line in FORMS])
def test_a_placeholder_line_the_file_already_holds_never_trips_it(kind: str, line: str) -> None:
    old = f"a\n  {line.strip()}  \nb\n"  # held, indented differently
    assert find_placeholder(f"a\n{line}\nb\nc\n", old) is None


@pytest.mark.parametrize("line", ORDINARY)
def test_ordinary_lines_are_not_placeholders(line: str) -> None:
    assert find_placeholder(f"{line}\n", "") is None


@given(st.text(st.characters(codec="utf-8"), max_size=400))
def test_text_the_file_holds_never_trips_it(old: str) -> None:
    assert find_placeholder(old, old) is None


async def test_an_overwrite_with_a_placeholder_is_refused_and_allow_placeholders_writes_it(ws: Path) -> None:
    original = "def a():\n    return 1\n\ndef b():\n    return 2\n"
    (ws / "m.py").write_text(original)
    sloppy = "def a():\n    return 10\n\n# ... rest of the code unchanged\n"
    async with connect(ws, approval="auto") as c:
        await call(c, "ReadFile", path="m.py")
        refused = await call(c, "WriteFile", path="m.py", content=sloppy)
        assert refused.is_error
        assert (ws / "m.py").read_text() == original
        assert "line 4: `# ... rest of the code unchanged`" in text(refused)
        assert "allow_placeholders: true" in text(refused)
        # Appending and creating are not overwrites of the text: no guard.
        made = await call(c, "WriteFile", path="new.py", content=sloppy)
        assert not made.is_error, text(made)
        forced = await call(c, "WriteFile", path="m.py", content=sloppy, allow_placeholders=True)
    assert not forced.is_error, text(forced)
    assert (ws / "m.py").read_text() == sloppy


# What a placeholder says was left out, and how it says so: each in a line of its own, so a
# word the guard stops knowing fails here (mutmut does not mutate the module's patterns).
LEFT_OUT = [
    "content",
    "contents",
    "files",
    "method",
    "classes",
    "logic",
    "lines",
    "body",
    "section",
    "styles",
    "text",
    "config",
    "configuration",
    "markup",
    "html",
    "props",
    "fields",
    "definitions",
    "program",
    "module",
    "paragraphs",
    "entries",
    "steps",
    "queries",
    "statements",
    "columns",
    "keys",
    "values",
    "options",
    "settings",
    "properties",
    "blocks",
    "routes",
    "endpoints",
    "elements",
    "children",
    "attributes",
    "slides",
    "cells",
    "targets",
    "recipes",
    "jobs",
]
SAYING = [
    "unchanged", "remains", "remain the same", "stays the same", "the same", "goes here",
    "omitted", "elided", "truncated", "not shown", "left out", "for brevity", "untouched",
    "continues", "follows", "unmodified", "preserved", "kept",
]  # fmt: skip
MORE_FORMS = [
    *(f"// ... rest of the {what} ..." for what in LEFT_OUT),
    *(f"# rest of the file {saying}" for saying in SAYING),
    "(* rest of the module unchanged *)",
    "rem rest of the script unchanged",
    "// the rest is unchanged",
    "# snipped",
    "-- for brevity",
]


@pytest.mark.parametrize("line", MORE_FORMS)
def test_each_word_for_what_was_left_out_and_how_is_found(line: str) -> None:
    assert find_placeholder(f"x = 1\n{line}\n", "x = 1\n") == (2, line)
