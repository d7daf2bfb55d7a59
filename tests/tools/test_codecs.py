"""SPEC §8.1 through the real server: a file's own codec and line endings, read and written."""

from __future__ import annotations

import codecs
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import call, connect, text, texts, without_write_id
from tests.fakes import Answers

LATIN1 = b"caf\xe9 au lait\r\n"


async def read_then_edit(ws: Path, mode: str, name: str, edits: Any, read: dict[str, Any] | None = None,
                         **kw: Any) -> tuple[list[str], Any]:  # fmt: skip
    async with connect(ws, mode, **kw) as c:
        r = await call(c, "ReadFile", path=name, **(read or {}))
        assert not r.is_error, text(r)
        e = await call(c, "StrReplaceFile", path=name, edit=edits)
        return texts(r), e


async def test_latin1_file_is_read_and_edited_in_its_own_codec(ws: Path, mode: str) -> None:
    (ws / ".editorconfig").write_text("root = true\n[*.txt]\ncharset = windows-1252\n")
    (ws / "menu.txt").write_bytes(LATIN1)
    (out, msg), e = await read_then_edit(ws, mode, "menu.txt", {"old": "au lait", "new": "crème"})
    assert out == "     1\tcafé au lait\n"
    assert msg == (
        "1 lines read from file starting from line 1. Total lines in file: 1. End of file reached."
        " Encoding: windows-1252 (from .editorconfig)."
    )
    assert not e.is_error, text(e)
    assert (ws / "menu.txt").read_bytes() == b"caf\xe9 cr\xe8me\r\n"
    assert "Encoding: windows-1252 (from .editorconfig); written in it." in text(e)


async def test_legacy_encoding_flag_decodes_an_undeclared_file(ws: Path) -> None:
    (ws / "menu.txt").write_bytes(LATIN1)
    (out, msg), e = await read_then_edit(ws, "auto", "menu.txt", {"old": "au lait", "new": "crème"},
                                         legacy_encoding="latin-1")  # fmt: skip
    assert out == "     1\tcafé au lait\n" and msg.endswith(" Encoding: latin-1 (from --legacy-encoding).")
    assert (ws / "menu.txt").read_bytes() == b"caf\xe9 cr\xe8me\r\n"


async def test_undecodable_file_says_how_to_decode_it_and_edits_keep_its_bytes(ws: Path) -> None:
    (ws / "menu.txt").write_bytes(LATIN1)
    (out, msg), e = await read_then_edit(ws, "auto", "menu.txt", {"old": "lait", "new": "thé"})
    assert out == "     1\tcaf\ufffd au lait\n"
    assert "not valid UTF-8" in msg and "`encoding`" in msg and "--legacy-encoding" in msg
    assert not e.is_error
    assert (ws / "menu.txt").read_bytes() == b"caf\xe9 au th\xc3\xa9\r\n"  # today's behaviour, unchanged


async def test_a_failed_edit_of_an_undecodable_file_says_again_how_to_decode_it(ws: Path) -> None:
    """The model wrote `café` where the read showed `caf\ufffd`: the edit matches nothing, and
    its error repeats the read's hint (a UTF-8 file's failure stays as it was)."""
    (ws / "menu.txt").write_bytes(LATIN1)
    (ws / "plain.txt").write_bytes(b"cafe au lait\n")
    _, e = await read_then_edit(ws, "auto", "menu.txt", {"old": "café", "new": "thé"})
    assert e.is_error
    assert text(e).startswith("No replacements were made: the old string was not found in `menu.txt`.")
    assert (
        " The file is not valid UTF-8: its bytes that are not were shown as \ufffd (U+FFFD) and match"
        " nothing. Read it with ReadFile's `encoding` (e.g. cp1252, gb18030, shift_jis), which this"
        " session's edits of it then use, or start filegate with --legacy-encoding NAME (or auto)."
    ) in text(e)
    assert (ws / "menu.txt").read_bytes() == LATIN1
    _, plain = await read_then_edit(ws, "auto", "plain.txt", {"old": "café", "new": "thé"})
    assert plain.is_error and "not valid UTF-8" not in text(plain)


async def test_read_encoding_is_remembered_for_the_sessions_edits(ws: Path) -> None:
    data = "東京の天気は晴れ\r\n".encode("shift_jis")
    (ws / "jp.txt").write_bytes(data)
    edits = {"old": "晴れ", "new": "雨"}
    (out, msg), e = await read_then_edit(ws, "auto", "jp.txt", edits, {"encoding": "shift_jis"})
    assert out == "     1\t東京の天気は晴れ\n" and msg.endswith(" Encoding: shift_jis (from encoding).")
    assert not e.is_error, text(e)
    assert (ws / "jp.txt").read_bytes() == "東京の天気は雨\r\n".encode("shift_jis")


async def test_gb18030_declared_by_a_coding_line(ws: Path) -> None:
    data = "# -*- coding: gb18030 -*-\nname = '北京'\n".encode("gb18030")
    (ws / "city.py").write_bytes(data)
    (out, msg), e = await read_then_edit(ws, "auto", "city.py", {"old": "北京", "new": "上海"})
    assert "name = '北京'" in out and msg.endswith(" Encoding: gb18030 (from coding line).")
    assert (ws / "city.py").read_bytes() == data.replace("北京".encode("gb18030"), "上海".encode("gb18030"))


async def test_a_character_the_codec_cannot_hold_refuses_the_edit(ws: Path) -> None:
    (ws / "menu.txt").write_bytes(LATIN1)
    edits = [{"old": "caf", "new": "Caf"}, {"old": "lait", "new": "lait ☕"}]
    _, e = await read_then_edit(ws, "auto", "menu.txt", edits, legacy_encoding="latin-1")
    assert e.is_error
    assert "`new` of edit 2 (of 2) holds U+2615" in text(e) and "latin-1" in text(e)
    assert (ws / "menu.txt").read_bytes() == LATIN1


@pytest.mark.usefixtures("read_guard_off")
async def test_overwrite_keeps_codec_bom_and_crlf_and_says_so(ws: Path) -> None:
    (ws / "u16.txt").write_bytes(codecs.BOM_UTF16_LE + "a\r\nb\r\n".encode("utf-16-le"))
    (ws / "l1.txt").write_bytes(LATIN1)
    (ws / "dos.txt").write_bytes(b"a\r\nb\r\n")
    (ws / "mixed.txt").write_bytes(b"a\r\nb\n")
    async with connect(ws, "auto", legacy_encoding="cp1252") as c:
        r1 = await call(c, "WriteFile", path="u16.txt", content="x\ny\n")
        r2 = await call(c, "WriteFile", path="l1.txt", content="thé\n")
        r3 = await call(c, "WriteFile", path="dos.txt", content="é\nz\n")
        r4 = await call(c, "WriteFile", path="mixed.txt", content="é\nz\n")
    assert (ws / "dos.txt").read_bytes() == "é\r\nz\r\n".encode()
    assert without_write_id(texts(r3)[0]).endswith(
        " Kept the file's CRLF line endings (the content's line breaks were written as CRLF)."
    )
    assert (ws / "mixed.txt").read_bytes() == "é\nz\n".encode()  # no one style to keep
    assert [without_write_id(t) for t in texts(r4)] == [
        "File successfully overwritten. Current size: 5 bytes. Lines: +2 -2."
    ]
    assert (ws / "u16.txt").read_bytes() == codecs.BOM_UTF16_LE + "x\r\ny\r\n".encode("utf-16-le")
    assert "Kept the file's encoding utf-16-le, its byte order mark, its CRLF line endings" in text(r1)
    assert (ws / "l1.txt").read_bytes() == b"th\xe9\r\n"
    assert "Kept the file's encoding cp1252 (from --legacy-encoding), its CRLF" in text(r2)


async def test_new_file_follows_gitattributes_then_editorconfig(ws: Path) -> None:
    (ws / ".gitattributes").write_text("*.bat eol=crlf\n")
    (ws / ".editorconfig").write_text(
        "root = true\n[*.ini]\nend_of_line = crlf\ncharset = latin1\ninsert_final_newline = true\n"
    )
    async with connect(ws, "auto") as c:
        r1 = await call(c, "WriteFile", path="run.bat", content="echo a\necho b\n")
        r2 = await call(c, "WriteFile", path="app.ini", content="name=café\nx=1")
        r3 = await call(c, "WriteFile", path="plain.txt", content="a\nb\n")
    assert (ws / "run.bat").read_bytes() == b"echo a\r\necho b\r\n"
    assert "Written as .gitattributes: *.bat eol=crlf asked." in text(r1)
    assert (ws / "app.ini").read_bytes() == b"name=caf\xe9\r\nx=1\r\n"
    assert ".editorconfig end_of_line = crlf; .editorconfig charset = latin1" in text(r2)
    assert (ws / "plain.txt").read_bytes() == b"a\nb\n"
    assert [without_write_id(t) for t in texts(r3)] == [
        "Created `plain.txt`. Current size: 4 bytes. Lines: +2 -0."
    ]


async def test_the_question_and_dry_run_show_decoded_text_and_name_the_codec(ws: Path) -> None:
    (ws / ".editorconfig").write_text("root = true\n[*.txt]\ncharset = windows-1252\n")
    (ws / "menu.txt").write_bytes(LATIN1)
    recorder = Answers("approve")
    edits = {"old": "au lait", "new": "crème"}
    async with connect(ws, "auto", client_elicitation_handler=recorder) as c:
        await call(c, "ReadFile", path="menu.txt")
        preview = await call(c, "StrReplaceFile", path="menu.txt", edit=edits, dry_run=True)
        assert (ws / "menu.txt").read_bytes() == LATIN1
        done = await call(c, "StrReplaceFile", path="menu.txt", edit=edits)
    diff, msg = texts(preview)
    assert "-café au lait" in diff and "+café crème" in diff
    assert "Encoding: windows-1252 (from .editorconfig); written in it." in msg
    (question,) = recorder.messages
    assert "-café au lait" in question and "+café crème" in question
    assert "Encoding: windows-1252 (from .editorconfig)" in question
    assert not done.is_error and (ws / "menu.txt").read_bytes() == b"caf\xe9 cr\xe8me\r\n"


@pytest.mark.parametrize("answer", ["reject", "approve"])
async def test_a_sensitive_legacy_file_tells_no_codec_before_approval(ws: Path, answer: str) -> None:
    (ws / ".editorconfig").write_text("root = true\n[*]\ncharset = windows-1252\n")
    secret = b"PASSWORD=caf\xe9\r\n"
    (ws / ".env").write_bytes(secret)
    recorder = Answers(answer)
    async with connect(ws, "auto", client_elicitation_handler=recorder) as c:
        r = await call(c, "StrReplaceFile", path=".env", edit={"old": "caf", "new": "☕"})
    shown = text(r) + "".join(recorder.messages)
    for fact in ("windows-1252", "cp1252", "Encoding", "U+2615", "encoding"):
        assert fact not in shown, shown
    assert r.is_error and (ws / ".env").read_bytes() == secret


# SPEC §8.1's exact rule through the server (issue 53 items 1-3): a codec in which ASCII bytes do
# not read as themselves is never used, from any declaration, flag or parameter, and the answer
# names it and where it was declared.

HZ_PAYLOAD = b"echo building ~{;>PWNED;~}\n"  # in HZ: "echo building 痪凶闻幕"


async def test_an_hz_editorconfig_cannot_disguise_a_new_scripts_bytes(ws: Path) -> None:
    """The round's attack: the model writes `.editorconfig` (charset = hz), then build.sh with
    what HZ spells as ASCII; the question showed Chinese while the file held ~{;>PWNED;~}."""
    (ws / ".editorconfig").write_text("root = true\n[*]\ncharset = hz\n")
    content = HZ_PAYLOAD.decode("hz")
    assert content == "echo building 痪凶闻幕\n"
    recorder = Answers("approve")
    async with connect(ws, "auto", client_elicitation_handler=recorder, approval="ask") as c:
        r = await call(c, "WriteFile", path="build.sh", content=content)
    assert not r.is_error, text(r)
    assert (ws / "build.sh").read_bytes() == content.encode()  # the bytes are the text shown
    refused = (
        "The codec hz (from .editorconfig) is refused: in it, ASCII bytes do not always read as the "
        "same ASCII text (the byte 0x7E ('~') starts a shift or escape sequence). It is written as UTF-8."
    )
    assert refused in text(r)
    (question,) = recorder.messages
    assert question.splitlines()[0] == "Inside the workspace: WriteFile wants to create `build.sh`."
    assert refused in question


@pytest.mark.parametrize(
    ("name", "data", "where"),
    [
        (".editorconfig", None, ".editorconfig"),
        ("build.py", b"# coding: hz\n", "coding line"),
        ("build.xml", b'<?xml version="1.0" encoding="hz"?>\n', "XML declaration"),
        ("build.html", b"<meta charset=hz>\n", "HTML meta charset"),
    ],
)
async def test_a_declared_hz_is_refused_by_readfile_and_edits_naming_where(
    ws: Path, name: str, data: bytes | None, where: str
) -> None:
    """A file that is not valid UTF-8 (so its declaration is consulted) and declares HZ: shown
    as its bytes, the refusal named, and an edit writes UTF-8 (never HZ)."""
    target = "build.sh" if data is None else name
    if data is None:
        (ws / ".editorconfig").write_text("root = true\n[*]\ncharset = hz\n")
    (ws / target).write_bytes((data or b"") + HZ_PAYLOAD + b"# \xff\n")
    async with connect(ws, "auto") as c:
        r = await call(c, "ReadFile", path=target)
        e = await call(c, "StrReplaceFile", path=target, edit={"old": "building", "new": "built"})
    assert "echo building ~{;>PWNED;~}" in text(r)
    assert f"The codec hz (from {where}) is refused: " in text(r) and "It is read as UTF-8." in text(r)
    assert not e.is_error, text(e)
    assert f"The codec hz (from {where}) is refused: " in text(e)
    assert (ws / target).read_bytes() == (data or b"") + b"echo built ~{;>PWNED;~}\n# \xff\n"


async def test_meta_charset_counts_only_in_an_html_file(ws: Path) -> None:
    data = "<meta charset=cp1252>\ncafé\n".encode("cp1252")
    (ws / "page.html").write_bytes(data)
    (ws / "notes.txt").write_bytes(data)
    async with connect(ws, "auto") as c:
        html = await call(c, "ReadFile", path="page.html")
        txt = await call(c, "ReadFile", path="notes.txt")
    assert "café" in text(html) and "Encoding: cp1252 (from HTML meta charset)." in text(html)
    assert "caf\ufffd" in text(txt) and "cp1252 (from" not in text(txt)


async def test_utf7_cannot_forge_a_numbered_line(ws: Path) -> None:
    """UTF-7's "+AAo-" is a line break: a declared UTF-7 made ReadFile show a forged line 99."""
    (ws / ".editorconfig").write_text("root = true\n[*]\ncharset = utf-7\n")
    (ws / "notes.txt").write_bytes(b"a\n+AAo-    99\tforged line\n\xff\n")
    async with connect(ws, "auto") as c:
        r = await call(c, "ReadFile", path="notes.txt")
    out, msg = texts(r)
    assert out.splitlines()[1] == "     2\t+AAo-    99\tforged line"
    assert "The codec utf-7 (from .editorconfig) is refused: " in msg and "0x2B ('+')" in msg


@pytest.mark.parametrize(
    ("charset", "why"),
    [("idna", "starts a shift or escape sequence"), ("punycode", "does not decode alone"),
     ("rot13", "it is not a text codec"), ("unicode_escape", "the byte 0x5C"),
     ("iso-2022-jp", "the byte 0x1B starts a shift"), ("base64_codec", "it is not a text codec")],
)  # fmt: skip
async def test_codecs_that_are_not_ascii_text_are_refused_in_words(ws: Path, charset: str, why: str) -> None:
    """`idna` made ReadFile fail with a bare "Error calling tool" (an unhandled UnicodeError)."""
    (ws / ".editorconfig").write_text(f"root = true\n[*]\ncharset = {charset}\n")
    (ws / "notes.txt").write_bytes(b"abc \x1b$B%H\x1b(B xn--ls8h \\u0041 \xff\n")
    async with connect(ws, "auto") as c:
        r = await call(c, "ReadFile", path="notes.txt")
        p = await call(c, "ReadFile", path="notes.txt", encoding=charset)
    assert not r.is_error, text(r)
    assert f"The codec {charset} (from .editorconfig) is refused: " in text(r) and why in text(r)
    assert "\\u0041" in text(r) and "xn--ls8h" in text(r)
    assert p.is_error and "Error calling tool" not in text(p)
    assert f"The codec {charset} (from ReadFile's encoding parameter) is refused: " in text(p)


async def test_a_declared_codec_is_named_in_the_questions_first_line(ws: Path) -> None:
    (ws / ".editorconfig").write_text(
        "root = true\n[*.txt]\ncharset = gb18030\n[*.u16]\ncharset = utf-16le\n"
    )
    (ws / "old.txt").write_bytes("北京\n".encode("gb18030"))
    recorder = Answers("approve")
    async with connect(ws, "auto", client_elicitation_handler=recorder, approval="ask") as c:
        await call(c, "ReadFile", path="old.txt")
        await call(c, "StrReplaceFile", path="old.txt", edit={"old": "北京", "new": "上海"})
        await call(c, "WriteFile", path="new.txt", content="东京\n")
        await call(c, "WriteFile", path="wide.u16", content="wide\n")
        await call(c, "WriteFile", path="plain.md", content="plain\n")
    first = [m.splitlines()[0] for m in recorder.messages]
    assert first == [
        "Inside the workspace: StrReplaceFile wants to change `old.txt`, encoded in gb18030 (from .editorconfig).",
        "Inside the workspace: WriteFile wants to create `new.txt`, encoded in gb18030 (from .editorconfig).",
        "Inside the workspace: WriteFile wants to create `wide.u16`, encoded in utf-16le (from .editorconfig).",
        "Inside the workspace: WriteFile wants to create `plain.md`.",
    ]
    # SPEC §8.1: UTF-16/32 only with their byte order mark, so a new file gets it.
    assert (ws / "wide.u16").read_bytes() == codecs.BOM_UTF16_LE + "wide\n".encode("utf-16-le")
    assert (ws / "old.txt").read_bytes() == "上海\n".encode("gb18030")


async def test_utf16_is_used_only_for_a_file_with_its_byte_order_mark(ws: Path) -> None:
    (ws / "marked.txt").write_bytes(codecs.BOM_UTF16_BE + "wide\n".encode("utf-16-be"))
    (ws / "plain.txt").write_bytes(b"ab\n")
    async with connect(ws, "auto") as c:
        marked = await call(c, "ReadFile", path="marked.txt", encoding="utf-16")
        plain = await call(c, "ReadFile", path="plain.txt", encoding="utf-16-le")
    assert "wide" in text(marked) and "Encoding: utf-16 (from encoding)." in text(marked)
    assert "     1\tab\n" in text(plain)
    assert (
        "The codec utf-16-le (from encoding) is refused: it is used only for a file that starts with "
        "its byte order mark. It is read as UTF-8." in text(plain)
    )


# A file that is valid UTF-8 but still declares latin-1 (a declaration left over from before the
# file was converted): valid UTF-8 comes before any declaration (SPEC §8.1), so it reads and is
# edited as UTF-8. Were the declaration tried first, "café" would read as "cafÃ©" and the edit
# would write the file back in latin-1: a silent change of codec.
STALE_DECLARATIONS = [
    pytest.param(
        "notes.txt", "café au lait\n", "root = true\n[*.txt]\ncharset = latin1\n", id="editorconfig"
    ),
    pytest.param("menu.py", "# -*- coding: latin-1 -*-\nname = 'café au lait'\n", None, id="coding-line"),
    pytest.param(
        "menu.xml", '<?xml version="1.0" encoding="ISO-8859-1"?>\n<dish>café au lait</dish>\n', None, id="xml"
    ),
    pytest.param(
        "menu.html", '<html><head><meta charset="iso-8859-1"></head>\n<p>café au lait</p>\n', None, id="html"
    ),
]


@pytest.mark.parametrize(("name", "content", "editorconfig"), STALE_DECLARATIONS)
async def test_a_utf8_file_with_a_stale_latin1_declaration_reads_and_edits_as_utf8(
    ws: Path, name: str, content: str, editorconfig: str | None
) -> None:
    if editorconfig is not None:
        (ws / ".editorconfig").write_text(editorconfig)
    (ws / name).write_bytes(content.encode())
    # The edit's `old` is ASCII, so it is found in either reading: what it writes shows the codec.
    (out, msg), e = await read_then_edit(ws, "auto", name, {"old": "au lait", "new": "crème"})
    assert "café au lait" in out and "Ã" not in out
    assert "Encoding" not in msg  # UTF-8: no codec to name
    assert not e.is_error, text(e)
    assert "Encoding" not in text(e)
    assert (ws / name).read_bytes() == content.replace("au lait", "crème").encode()  # one codec: UTF-8


def git_eol(ws: Path, rel: str) -> str | None:
    """The line break git itself gives a new file at ``rel`` (``git check-attr``, the
    oracle): eol=crlf → CRLF; eol=lf, or text with no eol → LF (core.eol's default on POSIX)."""
    if not (ws / ".git").exists():
        subprocess.run(["git", "init", "-q", str(ws)], check=True, capture_output=True)
    said = subprocess.run(
        ["git", "-C", str(ws), "check-attr", "text", "eol", "--", rel],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    attrs = dict(line.rsplit(": ", 2)[1:] for line in said.splitlines())
    if attrs["eol"] in ("crlf", "lf"):
        return {"crlf": "\r\n", "lf": "\n"}[attrs["eol"]]
    return "\n" if attrs["text"] == "set" else None


# Each new file's line break as git decides it: in one .gitattributes file the last matching line
# wins, and a deeper file wins over an outer one (gitattributes(5)); `text eol=crlf` is CRLF.
GITATTRIBUTES = {
    ".gitattributes": "*.bat eol=lf\n*.bat text eol=crlf\n*.txt eol=crlf\n*.cmd text eol=crlf\n*.md text\n",
    "sub/.gitattributes": "*.txt eol=lf\n*.md eol=crlf\n",
}
NEW_FILES = {
    "run.bat": ("\r\n", ".gitattributes: *.bat text eol=crlf"),  # the later line of the file
    "sub/run.bat": ("\r\n", ".gitattributes: *.bat text eol=crlf"),  # nothing deeper says otherwise
    "go.cmd": ("\r\n", ".gitattributes: *.cmd text eol=crlf"),  # text and eol=crlf: CRLF
    "notes.txt": ("\r\n", ".gitattributes: *.txt eol=crlf"),
    "sub/notes.txt": ("\n", "sub/.gitattributes: *.txt eol=lf"),  # the deeper file
    "readme.md": ("\n", ".gitattributes: *.md text"),  # text with no eol: LF
    "sub/readme.md": ("\r\n", "sub/.gitattributes: *.md eol=crlf"),
}


async def test_gitattributes_decide_a_new_files_line_endings_as_git_does(ws: Path) -> None:
    (ws / "sub").mkdir()
    for name, rules in GITATTRIBUTES.items():
        (ws / name).write_text(rules)
    async with connect(ws, "auto") as c:
        results = {name: await call(c, "WriteFile", path=name, content="one\ntwo\n") for name in NEW_FILES}
    for name, (eol, rule) in NEW_FILES.items():
        assert git_eol(ws, name) == eol, name  # the expectation is git's own
        assert not results[name].is_error, text(results[name])
        assert (ws / name).read_bytes() == f"one{eol}two{eol}".encode(), name
        assert rule in text(results[name]), (name, text(results[name]))
