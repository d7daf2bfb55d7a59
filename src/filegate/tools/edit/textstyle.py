"""How a new text file is written (SPEC §8.1): UTF-8 with LF unless the path's `.gitattributes`
(``eol``, ``text``) or `.editorconfig` (``end_of_line``, ``charset``, ``insert_final_newline``)
say otherwise. `.gitattributes` files are read the careful way ignore files are (Grep's
:func:`read_rules`: no symlink, regular files, bounded), from the workspace folder down to the
file's own folder, and matched with the gitignore-style matcher Glob uses; `.editorconfig`
through EditorConfig's own library (fsio/codec.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from filegate.fsio.codec import BOM_OF, UTF8, FileCodec, RefusedCodec, allowed_codec, editorconfig_properties
from filegate.tools.search.ignores import pattern_matches, read_rules

GITATTRIBUTES = ".gitattributes"
# A declared tab width past this is not one a file is indented with: ignored.
MAX_TAB_WIDTH = 32


@dataclass(frozen=True, slots=True)
class NewFileStyle:
    codec: FileCodec = UTF8
    eol: str = "\n"
    final_newline: bool | None = None  # None: the content decides
    rules: tuple[str, ...] = ()  # what decided it, for the message

    def apply(self, content: str) -> str:
        text = content
        if self.eol != "\n":
            text = text.replace("\r\n", "\n").replace("\n", self.eol)
        if self.final_newline and text and not text.endswith(self.eol):
            text += self.eol
        return text


def declared_tab_width(real: Path) -> int | None:
    """The tab width `.editorconfig` gives the file's section (SPEC §8.2): ``tab_width``, else
    ``indent_size`` when it is a number (EditorConfig's own fallback); None when neither."""
    props = editorconfig_properties(real)
    for name in ("tab_width", "indent_size"):
        value = props.get(name, "")
        if value.isdecimal() and 1 <= int(value) <= MAX_TAB_WIDTH:
            return int(value)
    return None


def new_file_style(real: Path, workdir: Path) -> NewFileStyle:
    """The style for a file about to be created at ``real`` (inside ``workdir`` or not)."""
    props = editorconfig_properties(real)
    eol, rules = "\n", []
    git_eol = _gitattributes_eol(real, workdir)
    if git_eol is not None:
        eol = git_eol[0]
        rules.append(git_eol[1])
    elif props.get("end_of_line") in ("lf", "crlf", "cr"):
        eol = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}[props["end_of_line"]]
        rules.append(f".editorconfig end_of_line = {props['end_of_line']}")
    codec = UTF8
    charset = props.get("charset")
    if charset:
        try:
            name = allowed_codec(charset, any_bom=True)
        except RefusedCodec as no:
            codec = FileCodec(refused=no.at(".editorconfig").sentence())
        else:
            name = {"utf-16": "utf-16-le", "utf-32": "utf-32-le"}.get(name, name)
            # SPEC §8.1: UTF-16/32 only with their byte order mark, so a new file gets it.
            bom = {**BOM_OF, "utf-8": b"\xef\xbb\xbf" if charset.lower() == "utf-8-bom" else b""}.get(
                name, b""
            )
            codec = FileCodec(name, bom, ".editorconfig", charset.lower())
            rules.append(f".editorconfig charset = {charset.lower()}")
    final = {"true": True, "false": False}.get(props.get("insert_final_newline", ""))
    if final:
        rules.append(".editorconfig insert_final_newline = true")
    return NewFileStyle(codec, eol, final, tuple(rules))


def _gitattributes_eol(real: Path, workdir: Path) -> tuple[str, str] | None:
    """(line break, the rule) that `.gitattributes` files give ``real``; the deepest file and,
    in a file, the last matching line win (gitattributes(5))."""
    try:
        rel = real.relative_to(workdir)
    except ValueError:
        return None  # outside the workspace: its repositories are not ours to read
    folders = [workdir, *(workdir / Path(*rel.parts[:i]) for i in range(1, len(rel.parts)))]
    found: tuple[str, str] | None = None
    for folder in folders:
        lines = read_rules(str(folder / GITATTRIBUTES))
        below = real.relative_to(folder).as_posix()
        for line in lines or ():
            verdict = _eol_of_line(line, below)
            if verdict is not None:
                shown = (folder / GITATTRIBUTES).relative_to(workdir).as_posix()
                found = (verdict[0], f"{shown}: {verdict[1]}")
    return found


def _eol_of_line(line: str, rel: str) -> tuple[str, str] | None:
    parts = line.split()
    if not parts or parts[0].startswith("#") or not pattern_matches(parts[0], rel):
        return None
    attrs = parts[1:]
    if "eol=crlf" in attrs:
        return "\r\n", line.strip()
    if "eol=lf" in attrs or "text" in attrs:  # text with no eol: git's default core.eol, LF
        return "\n", line.strip()
    return None
