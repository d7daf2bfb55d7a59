"""ApplyPatch's plan (SPEC §10): Codex's V4A envelope and the ``changes`` list compiled to one
plan. Scenarios written from the format's public description (Codex's apply_patch tool
instructions), its documented edge cases included; the property: both forms give one plan."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from filegate.tools.patch.plan import (
    MAX_FILES,
    ChangeItem,
    FileChange,
    Plan,
    PlanEdit,
    PlanError,
    plan_from_changes,
)
from filegate.tools.patch.v4a import parse_v4a


def v4a(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


# --- the envelope ----------------------------------------------------------------------------


def test_the_documented_example_gives_an_add_an_update_with_a_move_and_a_delete() -> None:
    plan = parse_v4a(
        v4a(
            "*** Add File: hello.txt",
            "+Hello world",
            "*** Update File: src/app.py",
            "*** Move to: src/main.py",
            "@@ def greet():",
            '-print("Hi")',
            '+print("Hello, world!")',
            "*** Delete File: obsolete.txt",
        )
    )
    assert plan == Plan(
        (
            FileChange("hello.txt", content="Hello world\n"),
            FileChange(
                "src/app.py",
                (PlanEdit('print("Hi")\n', 'print("Hello, world!")\n', anchors=("def greet():",)),),
                move_to="src/main.py",
            ),
            FileChange("obsolete.txt", delete=True),
        )
    )
    assert [c.kind for c in plan.changes] == ["write", "move", "delete"]


def test_a_hunk_keeps_context_removed_and_added_lines_in_order() -> None:
    plan = parse_v4a(v4a("*** Update File: a.py", "@@", " one", "-two", "+TWO", "+two and a half", " three"))
    assert plan.changes[0].edits == (PlanEdit("one\ntwo\nthree\n", "one\nTWO\ntwo and a half\nthree\n"),)


def test_several_hunks_give_several_edits_and_the_first_may_leave_out_its_header() -> None:
    plan = parse_v4a(v4a("*** Update File: a.py", " a", "-b", "+B", "@@ def f():", "-c", "+C"))
    assert plan.changes[0].edits == (
        PlanEdit("a\nb\n", "a\nB\n"),
        PlanEdit("c\n", "C\n", anchors=("def f():",)),
    )


def test_consecutive_headers_narrow_step_by_step() -> None:
    plan = parse_v4a(v4a("*** Update File: a.py", "@@ class A:", "@@     def f(self):", "-x", "+y"))
    assert plan.changes[0].edits[0].anchors == ("class A:", "def f(self):")


def test_a_unified_diff_header_is_read_as_a_bare_header() -> None:
    plan = parse_v4a(v4a("*** Update File: a.py", "@@ -3,4 +3,5 @@", " a", "+b"))
    assert plan.changes[0].edits == (PlanEdit("a\n", "a\nb\n"),)


def test_end_of_file_marks_the_hunk() -> None:
    plan = parse_v4a(v4a("*** Update File: a.py", "@@", " last", "+after", "*** End of File"))
    assert plan.changes[0].edits == (PlanEdit("last\n", "last\nafter\n", at_end=True),)


def test_trailing_blank_context_is_dropped_but_not_at_the_end_of_the_file() -> None:
    dropped = parse_v4a(v4a("*** Update File: a.py", "@@", " a", "-b", "+c", "", " "))
    assert dropped.changes[0].edits == (PlanEdit("a\nb\n", "a\nc\n"),)
    kept = parse_v4a(v4a("*** Update File: a.py", "@@", "-b", "+c", " ", "*** End of File"))
    assert kept.changes[0].edits == (PlanEdit("b\n\n", "c\n\n", at_end=True),)


def test_a_blank_line_inside_a_hunk_is_empty_context() -> None:
    plan = parse_v4a(v4a("*** Update File: a.py", "@@", " a", "", "-b"))
    assert plan.changes[0].edits == (PlanEdit("a\n\nb\n", "a\n\n"),)


def test_a_hunk_that_only_adds_lines_has_no_old_text() -> None:
    plan = parse_v4a(v4a("*** Update File: a.py", "@@ import os", "+import sys"))
    assert plan.changes[0].edits == (PlanEdit("", "import sys\n", anchors=("import os",)),)


def test_an_empty_added_file_and_a_pure_move() -> None:
    plan = parse_v4a(v4a("*** Add File: empty.txt", "*** Update File: a", "*** Move to: b"))
    assert plan.changes == (FileChange("empty.txt", content=""), FileChange("a", move_to="b"))


def test_a_heredoc_wrapper_crlf_and_surrounding_blank_lines_are_accepted() -> None:
    body = v4a("*** Delete File: x")
    assert parse_v4a("apply_patch <<'EOF'\n" + body + "EOF\n").changes == (FileChange("x", delete=True),)
    assert parse_v4a("\n\n" + body.replace("\n", "\r\n") + "\n \n").changes == (FileChange("x", delete=True),)


def test_a_crlf_patch_reads_as_lf_and_a_lone_cr_stays_in_its_line() -> None:
    crlf = v4a("*** Update File: a.py", "@@", " one", "-two", "+TWO").replace("\n", "\r\n")
    assert parse_v4a(crlf).changes[0].edits == (PlanEdit("one\ntwo\n", "one\nTWO\n"),)
    # Not CRLF throughout: a CR is the line's own (a file with CRLF lines among LF ones).
    mixed = v4a("*** Update File: a.py", "@@", " one", "-two\r", "+TWO\r")
    assert parse_v4a(mixed).changes[0].edits == (PlanEdit("one\ntwo\r\n", "one\nTWO\r\n"),)


# A blank line ending a hunk is dropped only while both sides keep a line of their own.
@pytest.mark.parametrize(
    ("body", "edit"),
    [
        (("+x", ""), PlanEdit("\n", "x\n\n")),  # old is the blank line alone: kept
        (("-y", ""), PlanEdit("y\n\n", "\n")),  # new is the blank line alone: kept
        (("+x", " a", ""), PlanEdit("a\n", "x\na\n")),
        (("-a", "+x", ""), PlanEdit("a\n", "x\n")),
    ],
)
def test_trailing_blank_context_keeps_a_line_on_each_side(body: tuple[str, ...], edit: PlanEdit) -> None:
    assert parse_v4a(v4a("*** Update File: a.py", "@@", *body)).changes[0].edits == (edit,)


def test_added_lines_keep_leading_and_trailing_blanks() -> None:
    plan = parse_v4a(v4a("*** Add File: a", "+  indented  ", "+", "+\ttab"))
    assert plan.changes[0].content == "  indented  \n\n\ttab\n"


UPDATE_NOTHING = "has no hunk (`@@` and its lines) and no `*** Move to:`: it changes nothing."
HUNK_LINES = "every line starts with ` ` (context), `-` (removed) or `+` (added)"
TWICE = "give each file once, with all its edits in one change."


# Each refusal as the model reads it, whole: the line, what is wrong, and that nothing was written.
@pytest.mark.parametrize(
    ("patch", "words"),
    [
        ("", "`patch` must start with the line `*** Begin Patch`; it starts with nothing."),
        (
            "*** Begin Patch\n*** Delete File: a\n",
            "`patch` must end with the line `*** End Patch`; it ends with `*** Delete File: a`.",
        ),
        (
            "*** Begin Patch\n",
            "`patch` must end with the line `*** End Patch`; it ends with `*** Begin Patch`.",
        ),
        (
            "diff --git a/x b/x\n",
            "`patch` must start with the line `*** Begin Patch`; it starts with `diff --git a/x b/x`.",
        ),
        (
            "x" * 81 + "\n",
            f"`patch` must start with the line `*** Begin Patch`; it starts with `{'x' * 80}…`.",
        ),
        (
            "cat <<EOF\n" + v4a("*** Delete File: a") + "END\n",
            "`patch` must start with the line `*** Begin Patch`; it starts with `cat <<EOF`.",
        ),
        (v4a(), "`patch` holds no file section: nothing to change."),
        (
            v4a("*** Frobnicate File: a"),
            "`patch` line 2: expected `*** Add File: `, `*** Delete File: ` or `*** Update File: ` and a "
            "path, found `*** Frobnicate File: a`.",
        ),
        (
            v4a("*** Delete File: a", "", "*** End Patch", "*** Delete File: b"),
            "`patch` line 4: expected `*** Add File: `, `*** Delete File: ` or `*** Update File: ` and a "
            "path, found `*** End Patch`.",
        ),
        (
            v4a("*** Add File: a", "no plus"),
            "`patch` line 3: every line of `*** Add File: a` starts with `+` (a new file's lines); found "
            "`no plus`.",
        ),
        (
            v4a("*** Add File: a", "+x", ""),
            "`patch` line 4: every line of `*** Add File: a` starts with `+` (a new file's lines); found "
            "an empty line.",
        ),
        (v4a("*** Update File: a"), f"`patch` line 2: `*** Update File: a` {UPDATE_NOTHING}"),
        (
            v4a("*** Update File: a", "*** Delete File: b"),
            f"`patch` line 2: `*** Update File: a` {UPDATE_NOTHING}",
        ),
        (
            v4a("*** Update File: a", "@@", " only context"),
            "`patch` line 3: a hunk of `a` adds and removes no line.",
        ),
        (v4a("*** Update File: a", "@@"), "`patch` line 3: a hunk of `a` adds and removes no line."),
        (
            v4a("*** Update File: a", "@@", "*bad", "+x"),
            f"`patch` line 4: in a hunk of `a` {HUNK_LINES}; found `*bad`.",
        ),
        (
            v4a("*** Update File: a", "@@", "-a", "*** End of File", " b"),
            "`patch` line 6: a hunk of `a` must start with `@@`; found ` b`.",
        ),
        (
            "apply_patch <<'EOF'\nEOF\n",
            "`patch` must start with the line `*** Begin Patch`; it starts with nothing.",
        ),
        (
            "x" * 80 + "\n",
            f"`patch` must start with the line `*** Begin Patch`; it starts with `{'x' * 80}`.",
        ),
        (v4a("*** Update File: "), "`patch` line 2: `*** Update File:` names no path."),
        (v4a("*** Delete File:   "), "`patch` line 2: `*** Delete File:` names no path."),
        (v4a("*** Add File:  "), "`patch` line 2: `*** Add File:` names no path."),
        (v4a("*** Update File: a", "*** Move to: "), "`patch` line 3: `*** Move to:` names no path."),
        (
            v4a("*** Delete File: a", "*** Delete File: a"),
            f"`a` is named twice in the set (change 1 (`a`), and change 2 (`a`)): {TWICE}",
        ),
        (
            v4a("*** Update File: a", "*** Move to: b", "*** Delete File: b"),
            f"`b` is named twice in the set (the target of change 1 (`a`), and change 2 (`b`)): {TWICE}",
        ),
        (
            v4a("*** Delete File: b", "*** Update File: a", "*** Move to: b"),
            f"`b` is named twice in the set (change 1 (`b`), and the target of change 2 (`a`)): {TWICE}",
        ),
        (
            v4a("*** Update File: a", "@@", "-x", "+x"),
            "change 1 (`a`): `old` is the same as `new`, so the edit would change nothing.",
        ),
        (
            v4a("*** Update File: a", "@@", "-y", "+z", "@@", "-x", "+x"),
            "change 1 (`a`), edit 2 (of 2): `old` is the same as `new`, so the edit would change nothing.",
        ),
    ],
)
def test_a_malformed_patch_is_refused_naming_the_line(patch: str, words: str) -> None:
    with pytest.raises(PlanError) as info:
        parse_v4a(patch)
    assert info.value.message == words + " Nothing was written."
    assert info.value.brief == "Invalid change set"


def test_a_name_in_an_error_is_escaped() -> None:
    with pytest.raises(PlanError) as info:
        parse_v4a(v4a("*** Add File: a\x1b[31m", "oops"))
    assert "\x1b" not in info.value.message and "\\x1b" in info.value.message


def test_too_many_files_are_refused() -> None:
    with pytest.raises(PlanError) as info:
        parse_v4a(v4a(*(f"*** Delete File: f{i}" for i in range(MAX_FILES + 1))))
    assert info.value.message == (
        f"The set changes {MAX_FILES + 1} files; one ApplyPatch call changes at most {MAX_FILES}. Split it "
        "into several calls. Nothing was written."
    )
    assert len(parse_v4a(v4a(*(f"*** Delete File: f{i}" for i in range(MAX_FILES)))).changes) == MAX_FILES


# --- the ``changes`` form --------------------------------------------------------------------


def changes(*items: dict[str, object]) -> Plan:
    return plan_from_changes([ChangeItem.model_validate(i) for i in items])


def test_each_change_kind_compiles() -> None:
    plan = changes(
        {"path": "a", "edits": [{"old": "x", "new": "y", "replace_all": True, "match": "exact"}]},
        {"path": "b", "content": "hi\n"},
        {"path": "c", "delete": True},
        {"path": "d", "move_to": "e"},
        {"path": "f", "move_to": "g", "edits": [{"old": "1", "new": "2"}]},
    )
    assert plan.changes == (
        FileChange("a", (PlanEdit("x", "y", True, "exact"),)),
        FileChange("b", content="hi\n"),
        FileChange("c", delete=True),
        FileChange("d", move_to="e"),
        FileChange("f", (PlanEdit("1", "2"),), move_to="g"),
    )


ONE_OF = "each change gives exactly one of `edits`, `content`, `delete: true` or `move_to` (a move may carry `edits`)."
EMPTY_OLD = "`old` is empty. Give the exact text to replace; to write a whole file, give `content`."


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ({"path": "a"}, f"change 1 (`a`) gives nothing to do: {ONE_OF}"),
        (
            {"path": "a", "content": "x", "delete": True},
            f"change 1 (`a`) gives `content` and `delete`: {ONE_OF}",
        ),
        (
            {"path": "a", "content": "x", "move_to": "b"},
            f"change 1 (`a`) gives `content` and `move_to`: {ONE_OF}",
        ),
        (
            {"path": "a", "edits": [{"old": "x", "new": "y"}], "content": "x"},
            f"change 1 (`a`) gives `edits` and `content`: {ONE_OF}",
        ),
        (
            {"path": "a", "delete": True, "move_to": "b"},
            f"change 1 (`a`) gives `delete` and `move_to`: {ONE_OF}",
        ),
        ({"path": "a", "edits": []}, f"change 1 (`a`) gives nothing to do: {ONE_OF}"),
        ({"path": "a", "edits": [{"old": "", "new": "x"}]}, f"change 1 (`a`): {EMPTY_OLD}"),
        (
            {"path": "a", "edits": [{"old": "q", "new": "r"}, {"old": "", "new": "x"}]},
            f"change 1 (`a`), edit 2 (of 2): {EMPTY_OLD}",
        ),
        (
            {"path": "a", "move_to": "b", "edits": [{"old": "", "new": "x"}]},
            f"change 1 (`a`): {EMPTY_OLD}",
        ),
        (
            {"path": "a", "edits": [{"old": "q", "new": "r"}, {"old": "x", "new": "x"}]},
            "change 1 (`a`), edit 2 (of 2): `old` is the same as `new`, so the edit would change nothing.",
        ),
        ({"path": "", "delete": True}, "change 1 has an empty `path`."),
        ({"path": "a", "move_to": ""}, f"change 1 (`a`) gives nothing to do: {ONE_OF}"),
    ],
)
def test_a_malformed_change_is_refused_naming_it(item: dict[str, object], words: str) -> None:
    with pytest.raises(PlanError) as info:
        changes(item)
    assert info.value.message == words + " Nothing was written."


def test_the_second_malformed_change_is_named_by_its_number() -> None:
    with pytest.raises(PlanError) as info:
        changes({"path": "a", "delete": True}, {"path": "b"})
    assert info.value.message.startswith("change 2 (`b`) gives nothing to do")


def test_an_empty_changes_list_is_refused() -> None:
    with pytest.raises(PlanError) as info:
        plan_from_changes([])
    assert info.value.message == "`changes` is empty: give at least one file change. Nothing was written."
    assert info.value.brief == "Invalid change set"


# --- both forms, one plan --------------------------------------------------------------------

_line = st.text(st.characters(blacklist_categories=["Cs", "Cc", "Zl", "Zp"]), max_size=12).map(str.rstrip)
_lines = st.lists(_line, min_size=1, max_size=4)
_path = st.from_regex(r"[a-z]{1,6}(/[a-z]{1,6}){0,2}\.[a-z]{1,3}", fullmatch=True)


@st.composite
def hunks(draw: st.DrawFn) -> tuple[list[str], PlanEdit]:
    """A V4A hunk's lines and the edit it stands for (context ends in a non-blank line)."""
    before, removed, added, after = draw(_lines), draw(_lines), draw(_lines), draw(_lines)
    after = [*after[:-1], after[-1] or "end"]
    if removed == added:
        added = [*added, "new"]
    body = [" " + x for x in before] + ["-" + x for x in removed] + ["+" + x for x in added]
    body += [" " + x for x in after]
    old = "".join(x + "\n" for x in before + removed + after)
    new = "".join(x + "\n" for x in before + added + after)
    return ["@@", *body], PlanEdit(old, new)


@st.composite
def change_sets(draw: st.DrawFn) -> tuple[str, list[dict[str, object]]]:
    """The same set of changes as a V4A patch and as a ``changes`` list."""
    paths = draw(st.lists(_path, min_size=2, max_size=12, unique=True))
    patch: list[str] = []
    items: list[dict[str, object]] = []
    at = 0
    while at < len(paths):
        kind = draw(st.sampled_from(["add", "delete", "update", "move"]))
        path = paths[at]
        at += 1
        if kind == "add":
            lines = draw(st.lists(_line, max_size=4))
            patch += [f"*** Add File: {path}", *("+" + x for x in lines)]
            items.append({"path": path, "content": "".join(x + "\n" for x in lines)})
        elif kind == "delete":
            patch.append(f"*** Delete File: {path}")
            items.append({"path": path, "delete": True})
        else:
            target = paths[at] if kind == "move" and at < len(paths) else None
            at += target is not None
            drawn = draw(st.lists(hunks(), min_size=0 if target else 1, max_size=3))
            patch += [f"*** Update File: {path}", *([f"*** Move to: {target}"] if target else [])]
            patch += [line for lines, _ in drawn for line in lines]
            item: dict[str, object] = {"path": path}
            if drawn:
                item["edits"] = [{"old": e.old, "new": e.new} for _, e in drawn]
            if target:
                item["move_to"] = target
            items.append(item)
    return v4a(*patch), items


@settings(max_examples=100, deadline=None)
@given(change_sets())
def test_both_forms_give_the_same_plan(pair: tuple[str, list[dict[str, object]]]) -> None:
    patch, items = pair
    assert parse_v4a(patch) == changes(*items)
