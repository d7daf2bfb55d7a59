"""ReadFile through a real MCP client (in-memory, both protocol eras), on real files."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from PIL import Image

from tests.conftest import call, connect, text, texts


async def read(ws: Path, mode: str, **args: object) -> tuple[bool, list[str], dict | None]:
    async with connect(ws, mode) as c:
        r = await call(c, "ReadFile", **args)
        return r.is_error, texts(r), r.structured_content


async def test_numbered_lines_and_kimi_summary(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("one\ntwo\nthree\n")
    err, (out, msg), facts = await read(ws, mode, path="a.txt")
    assert not err
    assert out == "     1\tone\n     2\ttwo\n     3\tthree\n"
    assert msg == "3 lines read from file starting from line 1. Total lines in file: 3. End of file reached."
    assert facts == {"start_line": 1, "lines_read": 3, "total_lines": 3, "end_of_file": True,
                     "truncated_lines": [], "next_line_offset": None}  # fmt: skip


async def test_window_in_the_middle_reports_next_offset(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    err, (out, msg), facts = await read(ws, mode, path="a.txt", line_offset=10, n_lines=5)
    assert out.splitlines()[0] == "    10\tline 10" and len(out.splitlines()) == 5
    assert msg == "5 lines read from file starting from line 10. Total lines in file: 100."
    assert facts and facts["next_line_offset"] == 15 and not facts["end_of_file"]


async def test_no_trailing_newline_and_offset_past_the_end(ws: Path, mode: str) -> None:
    (ws / "a.txt").write_text("x\ny")
    _, (out, _msg), _ = await read(ws, mode, path="a.txt")
    assert out == "     1\tx\n     2\ty"
    err, parts, _ = await read(ws, mode, path="a.txt", line_offset=9)
    assert not err
    assert parts == ["No lines read from file. Total lines in file: 2. End of file reached."]


async def test_empty_file_reads_as_nothing(ws: Path, mode: str) -> None:
    (ws / "empty").write_bytes(b"")
    err, parts, facts = await read(ws, mode, path="empty")
    assert not err and parts == ["No lines read from file. Total lines in file: 0. End of file reached."]
    assert facts and facts["total_lines"] == 0


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
    assert facts and facts["next_line_offset"] == 1001
    _, (_out, msg), _ = await read(ws, mode, path="big.txt")
    assert msg == "1000 lines read from file starting from line 1. Total lines in file: 3000."


async def test_byte_cap_keeps_the_line_that_crosses_it(ws: Path, mode: str) -> None:
    (ws / "wide.txt").write_text(("x" * 199 + "\n") * 1000)
    _, (out, msg), _ = await read(ws, mode, path="wide.txt")
    assert out.count("\n") == 512  # 512 * 200 bytes = 102,400
    assert msg.endswith("Max 102400 bytes reached.")
    _, (out, msg), _ = await read(ws, mode, path="wide.txt", line_offset=-1000)
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
    assert msg.endswith("Lines [1, 3] were truncated.")
    assert facts and facts["truncated_lines"] == [1, 3]
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
    err, parts, _ = await read(ws, mode, path="doc.pdf")
    assert err and parts[0].startswith("`doc.pdf` seems not readable")


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
