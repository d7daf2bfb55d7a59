"""ReadFile through a real MCP client (in-memory, both protocol eras), on real files."""

from __future__ import annotations

import codecs
import io
import os
from pathlib import Path

import pytest
from fastmcp import Client
from PIL import Image

from filegate.policy.budget import tool_text_budget
from tests.conftest import MODES_LEGACY_SLOW, call, connect, stdio_transport, text, texts


@pytest.fixture(params=MODES_LEGACY_SLOW)
def mode(request: pytest.FixtureRequest) -> str:
    """Both eras; the handshake-era twin in the slow set (tests/conftest.py says why)."""
    return str(request.param)


async def read(
    ws: Path, mode: str, budget: int | None = None, **args: object
) -> tuple[bool, list[str], dict | None]:
    async with connect(ws, mode, result_budget=budget) as c:
        r = await call(c, "ReadFile", **args)
        assert r.structured_content is None  # text only (SPEC §1)
        return r.is_error, texts(r), None


async def test_numbered_lines_and_kimi_summary(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    err, (out, msg), facts = await read(ws, mode, path="a.txt")
    assert not err
    assert out == "     1\tone\n     2\ttwo\n     3\tthree\n"
    assert msg == "3 lines read from file starting from line 1. Total lines in file: 3. End of file reached."


async def test_window_in_the_middle_reports_next_offset(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    err, (out, msg), facts = await read(ws, mode, path="a.txt", line_offset=10, n_lines=5)
    assert out.splitlines()[0] == "    10\tline 10" and len(out.splitlines()) == 5
    assert msg == "5 lines read from file starting from line 10. Total lines in file: 100."


async def test_no_trailing_newline_and_offset_past_the_end(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("x\ny")
    _, (out, _msg), _ = await read(ws, mode, path="a.txt")
    assert out == "     1\tx\n     2\ty\n"  # the break before the summary (SPEC §1)
    err, parts, _ = await read(ws, mode, path="a.txt", line_offset=9)
    assert not err
    assert parts == ["No lines read from file. Total lines in file: 2. End of file reached."]


async def test_empty_file_reads_as_nothing(ws: Path, mode: str) -> None:
    (ws / "empty").write_bytes(b"")
    err, parts, facts = await read(ws, mode, path="empty")
    assert not err and parts == ["No lines read from file. Total lines in file: 0. End of file reached."]


async def test_tail_reads_the_last_lines_with_absolute_numbers(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("".join(f"l{i}\n" for i in range(1, 51)))
    _, (out, msg), _ = await read(ws, mode, path="a.txt", line_offset=-3)
    assert out == "    48\tl48\n    49\tl49\n    50\tl50\n"
    assert (
        msg == "3 lines read from file starting from line 48. Total lines in file: 50. End of file reached."
    )
    # Kimi's rule: the window is the last 5 lines, n_lines takes the first 2 of it
    _, (out, _msg), _ = await read(ws, mode, path="a.txt", line_offset=-5, n_lines=2)
    assert out == "    46\tl46\n    47\tl47\n"
    _, (out, _msg), _ = await read(ws, mode, path="a.txt", line_offset=-100)
    assert out.startswith("     1\tl1\n") and out.count("\n") == 50


async def test_at_most_1000_lines_per_call(ws: Path, mode: str) -> None:
    (ws / "big.txt").write_text("".join(f"{i}\n" for i in range(3000)))
    _, (out, msg), facts = await read(ws, mode, path="big.txt", n_lines=5000)
    assert out.count("\n") == 1000
    assert msg.endswith("Total lines in file: 3000. Max 1000 lines reached.")
    assert (
        msg
        == "1000 lines read from file starting from line 1. Total lines in file: 3000. Max 1000 lines reached."
    )
    _, (_out, msg), _ = await read(ws, mode, path="big.txt")
    assert msg == "1000 lines read from file starting from line 1. Total lines in file: 3000."


async def test_byte_cap_keeps_the_line_that_crosses_it(ws: Path, mode: str) -> None:
    (ws / "wide.txt").write_text(("x" * 199 + "\n") * 1000)
    _, (out, msg), _ = await read(ws, mode, path="wide.txt", budget=1 << 20)
    assert out.count("\n") == 512  # 512 * 200 bytes = 102,400
    assert msg.endswith("Max 102400 bytes reached.")
    _, (out, msg), _ = await read(ws, mode, path="wide.txt", line_offset=-1000, budget=1 << 20)
    assert out.count("\n") == 512 and out.endswith("  1000\t" + "x" * 199 + "\n")
    assert "Max 102400 bytes reached." in msg


async def test_long_lines_are_cut_like_kimi(ws: Path, mode: str) -> None:
    content = "a" * 2000 + "\n" + "c" * 1999 + "\n" + "d" * 5_000_000 + "\n" + "b" * 2000
    (ws / "long.txt").write_text(content)
    _, (out, msg), facts = await read(ws, mode, path="long.txt")
    rows = out.split("\n")
    assert rows[0] == "     1\t" + "a" * 1996 + "..."
    assert rows[1] == "     2\t" + "c" * 1999
    assert rows[2] == "     3\t" + "d" * 1996 + "..."
    assert rows[3] == "     4\t" + "b" * 2000  # 2000 characters and no line break: untouched
    assert (
        msg
        == "4 lines read from file starting from line 1. Total lines in file: 4. End of file reached. Lines [1, 3] were truncated."
        " Continue lines [1, 3] at column_offset=1996."  # SPEC §8.7
    )
    _, (out, _msg), _ = await read(ws, mode, path="long.txt", line_offset=-2, n_lines=1)
    assert out == "     3\t" + "d" * 1996 + "...\n"


async def test_crlf_shows_as_lf_and_invalid_utf8_as_replacement(ws: Path, mode: str) -> None:
    (ws / "w.txt").write_bytes(b"one\r\ntwo\r\nbad \xff\xfe byte\n")
    _, (out, _msg), _ = await read(ws, mode, path="w.txt")
    assert out == "     1\tone\n     2\ttwo\n     3\tbad \ufffd\ufffd byte\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"line_offset": 0}, "line_offset cannot be 0; use 1 for the first line or -1 for the last line"),
        ({"line_offset": -1001}, "line_offset cannot be less than -1000."),
        ({"n_lines": 0}, "n_lines: Input should be greater than or equal to 1"),
        ({"bogus": 1}, "bogus: Extra inputs are not permitted"),
    ],
)
async def test_bad_arguments_are_clear_errors(ws: Path, mode: str, args: dict, message: str) -> None:
    (ws / "a.txt").write_text("x\n")
    err, parts, _ = await read(ws, mode, path="a.txt", **args)
    assert err and parts[0].startswith("Error validating JSON arguments") and message in parts[0]


async def test_media_and_binary_files_are_refused_by_content(ws: Path, mode: str) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buf, "PNG")
    (ws / "picture").write_bytes(buf.getvalue())  # no extension: content decides
    (ws / "fake.png").write_text("just text\n")
    (ws / "doc.pdf").write_bytes(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n")
    err, parts, _ = await read(ws, mode, path="picture")
    assert err and parts[0].startswith("`picture` is an image file (image/png). Use ReadMediaFile")
    err, parts, _ = await read(ws, mode, path="fake.png")
    assert not err and parts[0] == "     1\tjust text\n"
    # A PDF is a document now (SPEC §8.6): a truncated one is refused by its reader.
    err, parts, _ = await read(ws, mode, path="doc.pdf")
    assert err and parts[0].startswith("Failed to read `doc.pdf` as a PDF (application/pdf): pypdf could not")
    (ws / "archive.zip").write_bytes(b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + bytes(range(256)) * 4)
    err, parts, _ = await read(ws, mode, path="archive.zip")
    assert err and parts[0].startswith("`archive.zip` seems not readable")


async def test_sensitive_files_are_refused_even_through_an_innocent_symlink(ws: Path, mode: str) -> None:
    (ws / ".env").write_text("API_KEY=hunter2\n")
    (ws / "notes").symlink_to(".env")
    (ws / ".env.example").write_text("API_KEY=\n")
    for name in (".env", "notes"):
        err, parts, _ = await read(ws, mode, path=name)
        assert err and "appears to contain secrets" in parts[0] and "hunter2" not in "".join(parts)
    err, _parts, _ = await read(ws, mode, path=".env.example")
    assert not err


async def test_paths_outside_follow_kimis_rule_and_confine(ws: Path, outside: Path, mode: str) -> None:
    (ws / "link").symlink_to(outside / "secret.txt")
    err, parts, _ = await read(ws, mode, path="../outside/secret.txt")
    assert err and parts[0].startswith("`../outside/secret.txt` is not an absolute path.")
    err, parts, _ = await read(ws, mode, path="link")
    assert err and "OUTSIDE-CONTENT" not in "".join(parts)
    err, parts, _ = await read(ws, mode, path=str(outside / "secret.txt"))
    assert not err and "OUTSIDE-CONTENT" in parts[0]
    async with connect(ws, mode, confine=True) as c:
        r = await call(c, "ReadFile", path=str(outside / "secret.txt"))
        assert r.is_error and "outside the workspace" in text(r) and "OUTSIDE" not in text(r)


async def test_prefix_sibling_is_not_inside(ws: Path, mode: str) -> None:
    evil = Path(str(ws) + "-evil")
    evil.mkdir()
    (evil / "x.txt").write_text("EVIL\n")
    async with connect(ws, mode, confine=True) as c:
        r = await call(c, "ReadFile", path=str(evil / "x.txt"))
        assert r.is_error and "EVIL" not in text(r)


async def test_things_that_are_not_files_never_block(ws: Path, mode: str) -> None:
    os.mkfifo(ws / "fifo")
    (ws / "loop").symlink_to("loop")
    (ws / "dir").mkdir()
    async with connect(ws, mode) as c:
        for path, expect in [
            ("fifo", "`fifo` is not a file."),
            ("/dev/zero", "`/dev/zero` is not a file."),
            ("dir", "`dir` is not a file."),
            ("nope.txt", "`nope.txt` does not exist."),
            ("loop", "symlink loop"),
            ("a\0b", "NUL byte"),
            ("", "File path cannot be empty."),
            ("x" * 5000, "too long"),
        ]:
            r = await call(c, "ReadFile", path=path)
            assert r.is_error and expect in text(r), (path, text(r))


async def test_tilde_expands_to_home(
    ws: Path, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "h.txt").write_text("home file\n")
    monkeypatch.setenv("HOME", str(home))
    err, parts, _ = await read(ws, mode, path="~/h.txt")
    assert not err and "home file" in parts[0]


# --- issue 11 / 18: answers a model can trust ------------------------------------------------

KIMI_BUDGET = 100_000
# What ReadFile may fill of it: the rest is kept for the lines a result ends with (SPEC §9).
KIMI_ROOM = tool_text_budget(KIMI_BUDGET)


def _kimi_sees(result: object) -> int:
    """What Kimi CLI counts against its 100,000-character cut: len() of every text part."""
    return sum(len(t) for t in texts(result))


async def test_a_full_read_fits_kimis_budget_with_whole_lines_and_the_summary(ws: Path) -> None:
    # 1000 lines of 100 bytes: under both of Kimi's caps, but 107,000 characters numbered.
    (ws / "long.txt").write_text("".join(f"{i:05d}" + "x" * 94 + "\n" for i in range(1, 1201)))
    async with Client(stdio_transport(ws, "--client", "kimi")) as c:
        r = await call(c, "ReadFile", path="long.txt")
        assert not r.is_error
        out, msg = texts(r)
        assert _kimi_sees(r) <= KIMI_BUDGET
        rows = out.split("\n")
        assert rows[-1] == ""  # ends with a whole line
        k = len(rows) - 1
        assert 900 < k < 1000
        assert all(row == f"{i:6d}\t{i:05d}" + "x" * 94 for i, row in enumerate(rows[:-1], 1))
        assert msg == (
            f"{k} lines read from file starting from line 1. Total lines in file: 1200."
            f" Max {KIMI_ROOM} characters reached (this client's result budget);"
            f" continue with line_offset={k + 1}."
        )
        r2 = await call(c, "ReadFile", path="long.txt", line_offset=k + 1)
        assert texts(r2)[0].startswith(f"{k + 1:6d}\t{k + 1:05d}")


async def test_a_tail_fits_kimis_budget_keeping_the_newest_lines(ws: Path, mode: str) -> None:
    (ws / "long.txt").write_text("".join(f"{i:05d}" + "y" * 94 + "\n" for i in range(1, 1201)))
    async with connect(ws, mode, client="kimi") as c:
        r = await call(c, "ReadFile", path="long.txt", line_offset=-1000)
        out, msg = texts(r)
        assert _kimi_sees(r) <= KIMI_BUDGET
        rows = out.split("\n")[:-1]
        first = 1200 - len(rows) + 1
        assert rows[0] == f"{first:6d}\t{first:05d}" + "y" * 94 and rows[-1].startswith("  1200\t01200")
        assert msg == (
            f"{len(rows)} lines read from file starting from line {first}. Total lines in file: 1200."
            f" Lines 201 to {first - 1} did not fit this client's result budget"
            f" ({KIMI_ROOM} characters): read them with line_offset=201, n_lines={first - 201}."
        )


async def test_long_truncated_lines_fit_too_and_list_only_what_is_shown(ws: Path, mode: str) -> None:
    # 1000 lines cut at 2000 characters: 2 MB of text, 102,400 bytes cap → 52 lines = 104k chars.
    (ws / "wide.txt").write_text(("x" * 3000 + "\n") * 1000)
    async with connect(ws, mode, client="kimi") as c:
        r = await call(c, "ReadFile", path="wide.txt")
        out, msg = texts(r)
        assert _kimi_sees(r) <= KIMI_BUDGET
        k = out.count("\n")
        assert out.endswith("x" * 1996 + "...\n") and 40 < k < 52
        assert msg.endswith(
            f"continue with line_offset={k + 1}. Lines {list(range(1, k + 1))} were truncated."
            f" Continue lines {list(range(1, k + 1))} at column_offset=1996."  # SPEC §8.7
        )


async def test_a_1_mib_budget_leaves_kimis_caps_alone(ws: Path, mode: str) -> None:
    (ws / "long.txt").write_text("".join(f"{i:05d}" + "x" * 94 + "\n" for i in range(1, 1201)))
    async with connect(ws, mode, result_budget=1 << 20) as c:
        r = await call(c, "ReadFile", path="long.txt")
        assert texts(r)[0].count("\n") == 1000


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be", "utf-8-sig"])
async def test_utf16_and_utf32_with_a_bom_are_decoded(ws: Path, mode: str, encoding: str) -> None:
    bom = {"utf-16-le": codecs.BOM_UTF16_LE, "utf-16-be": codecs.BOM_UTF16_BE,
           "utf-32-le": codecs.BOM_UTF32_LE, "utf-32-be": codecs.BOM_UTF32_BE, "utf-8-sig": b""}  # fmt: skip
    body = "".join(f"ligne {i} — été ✓ {chr(0x10A0 + i)}\r\n" for i in range(1, 41))
    (ws / "u.txt").write_bytes(bom[encoding] + body.encode(encoding))
    async with connect(ws, mode) as c:
        r = await call(c, "ReadFile", path="u.txt")
        out, msg = texts(r)
        assert "\0" not in out and "\ufeff" not in out and "\r" not in out
        assert out == "".join(f"{i:6d}\tligne {i} — été ✓ {chr(0x10A0 + i)}\n" for i in range(1, 41))
        # SPEC §8.1: a codec that is not UTF-8 is named, with where it came from.
        named = "" if encoding == "utf-8-sig" else f" Encoding: {encoding} (from its byte order mark)."
        assert (
            msg
            == "40 lines read from file starting from line 1. Total lines in file: 40. End of file reached."
            + named
        )
        r = await call(c, "ReadFile", path="u.txt", line_offset=-2)
        assert (
            texts(r)[0]
            == f"    39\tligne 39 — été ✓ {chr(0x10A0 + 39)}\n    40\tligne 40 — été ✓ {chr(0x10A0 + 40)}\n"
        )
        r = await call(c, "ReadFile", path="u.txt", line_offset=20, n_lines=1)
        assert texts(r)[0] == f"    20\tligne 20 — été ✓ {chr(0x10A0 + 20)}\n"


async def test_cr_only_line_endings_are_split_and_no_raw_cr_is_shown(ws: Path, mode: str) -> None:
    (ws / "mac.txt").write_bytes(b"one\rtwo\rthree\r")
    (ws / "mixed.txt").write_bytes(b"a\rb\nc\r\n\rd")
    async with connect(ws, mode) as c:
        r = await call(c, "ReadFile", path="mac.txt")
        assert texts(r) == ["     1\tone\n     2\ttwo\n     3\tthree\n",
                            "3 lines read from file starting from line 1. Total lines in file: 3. End of file reached."]  # fmt: skip
        r = await call(c, "ReadFile", path="mac.txt", line_offset=-1)
        assert texts(r)[0] == "     3\tthree\n"
        r = await call(c, "ReadFile", path="mixed.txt")
        assert "\r" not in "".join(texts(r))
        assert texts(r)[0] == "     1\ta\u240db\n     2\tc\n     3\t\u240dd\n"


async def test_video_refusal_reads_a_video_file(ws: Path, mode: str) -> None:
    (ws / "clip").write_bytes(b"\x1a\x45\xdf\xa3" + b"\x00" * 20 + b"webm" + b"\x00" * 100)
    err, parts, _ = await read(ws, mode, path="clip")
    assert err and parts[0].startswith("`clip` is a video file (video/webm). Use ReadMediaFile")


async def test_a_same_size_rewrite_with_its_mtime_restored_is_counted_again(ws: Path, mode: str) -> None:
    path = ws / "a.txt"
    path.write_text("a\nb\nc\nd\n")
    st = path.stat()
    _, (_out, msg), _ = await read(ws, mode, path="a.txt", line_offset=-1)
    assert "Total lines in file: 4." in msg
    with path.open("r+") as f:  # same inode, same size, then the old mtime back
        f.write("ab\ncd\n\n\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    _, (out, msg), _ = await read(ws, mode, path="a.txt", line_offset=-1)
    assert "Total lines in file: 4." in msg and out == "     4\t\n"
    with path.open("r+") as f:
        f.write("abcdef\n\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    _, (out, msg), _ = await read(ws, mode, path="a.txt", line_offset=-2)
    assert "Total lines in file: 2." in msg and out == "     1\tabcdef\n     2\t\n"


async def test_a_tiny_budget_still_returns_a_line_and_the_summary(ws: Path, mode: str) -> None:
    (ws / "wide.txt").write_text(("z" * 1990 + "\n") * 3)
    async with connect(ws, mode, result_budget=1024) as c:
        r = await call(c, "ReadFile", path="wide.txt")
        out, msg = texts(r)
        assert _kimi_sees(r) <= 1024
        assert out.startswith("     1\tzzz") and out.endswith("...\n") and out.count("\n") == 1
        assert msg == (
            "1 lines read from file starting from line 1. Total lines in file: 3."
            f" Max {tool_text_budget(1024)} characters reached (this client's result budget); continue with"
            " line_offset=2. Lines [1] were truncated. Continue line 1 at column_offset=434."  # SPEC §8.7
        )


async def test_a_tail_cut_by_the_byte_cap_and_the_budget_names_both(ws: Path, mode: str) -> None:
    # Issue 24.1: Kimi's byte cap keeps lines 21-122 (102 x 1,001 bytes); Kimi CLI's budget
    # then keeps fewer. Both cuts are named (SPEC §4 ReadFile), so lines 1-20 are not lost.
    (ws / "wide.txt").write_text("".join(f"{i:04d}" + "z" * 996 + "\n" for i in range(1, 123)))
    async with connect(ws, mode, client="kimi") as c:
        r = await call(c, "ReadFile", path="wide.txt", line_offset=-122)
        out, msg = texts(r)
        assert _kimi_sees(r) <= KIMI_BUDGET
        first = 122 - out.count("\n") + 1
        assert 21 < first < 30 and out.startswith(f"{first:6d}\t{first:04d}")
        assert msg == (
            f"{123 - first} lines read from file starting from line {first}. Total lines in file: 122."
            " Max 102400 bytes reached (lines 1 to 20 were left out)."
            f" Lines 21 to {first - 1} did not fit this client's result budget ({KIMI_ROOM} characters):"
            f" read lines 1 to {first - 1} with line_offset=1, n_lines={first - 1}."
        )


async def test_a_tilde_path_is_shown_as_written(
    ws: Path, mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Issue 24.6 / SPEC §2.9: the message quotes `~/…` as given, not the home directory.
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    err, parts, _ = await read(ws, mode, path="~/missing.txt")
    assert err and parts[-1].startswith("`~/missing.txt` does not exist")
    assert str(home) not in " ".join(parts)
