"""WriteFile's transformation (SPEC §4, §8.1, §8.4): a whole content as the bytes to write —
an existing file's codec, byte order mark and line-ending style kept, a new file in the style
its folder asks (.gitattributes, .editorconfig), an overwrite that stands a placeholder in for
code refused. WriteFile's, and ApplyPatch's for each file it writes whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from filegate.errors import WriteError
from filegate.fsio.codec import Eol, Unencodable, line_endings, with_line_endings
from filegate.fsio.spliced import Spliced
from filegate.policy.escape import escape
from filegate.policy.workspace import ResolvedPath
from filegate.tools.edit.placeholders import find_placeholder
from filegate.tools.edit.textstyle import new_file_style
from filegate.tools.edit.writing import MAX_FILE_BYTES, Change, Encoding
from filegate.tools.outcome import ToolEnv


@dataclass(frozen=True, slots=True)
class WholeContent:
    """A whole content to write: WriteFile's arguments that shape the bytes."""

    path: str  # as the caller gave it, for the messages
    content: str
    mode: Literal["overwrite", "append"] = "overwrite"
    allow_placeholders: bool = False


def new_bytes(params: WholeContent, data: bytes | None, rp: ResolvedPath, env: ToolEnv) -> Change[Kept]:
    """The pure transformation: the file's bytes (None: absent) → the bytes to write, in the
    file's codec and line-ending style (SPEC §8.1); a new file in the style its folder asks."""
    if data is None:
        style = new_file_style(rp.real, env.workspace.workdir)
        text, codec = style.apply(params.content), style.codec
        new = codec.bom + _encoded(params, codec, text)
        said: tuple[str, ...] = ("Written as " + "; ".join(style.rules) + " asked.",) if style.rules else ()
        said += (codec.refusal("written"),) if codec.refused else ()
        return Change(new, codec, Kept(style.rules, created=True, refused=codec.refusal("written")), said)
    codec = env.codec_of(data, rp.real)
    eol = _eol_of(data, codec)
    text = with_line_endings(params.content, eol)
    refused = (codec.refusal("written"),) if codec.refused else ()
    kept = Kept(_kept(codec, eol, converted=text != params.content) + refused)
    if params.mode == "overwrite":
        if not params.allow_placeholders:
            _check_placeholders(params, data[len(codec.bom) :].decode(codec.name, "replace"))
        new = codec.bom + _encoded(params, codec, text.removeprefix("\ufeff") if codec.bom else text)
        return Change(new, codec, kept, kept.rules)
    # The old bytes and the appended ones as pieces: the file is not held twice (a copy of
    # 128 MiB per preview), and the diff looks only at the end.
    grown = Spliced(data, len(data), len(data), _encoded(params, codec, text))
    if len(grown) > MAX_FILE_BYTES:
        raise WriteError(
            f"`{escape(params.path)}` would grow to {len(grown)} bytes; filegate writes files of at "
            f"most {MAX_FILE_BYTES} bytes.",
            "File too large",
        )
    return Change(grown, codec, kept, kept.rules, span=(len(data), len(data), len(grown)))


@dataclass(frozen=True, slots=True)
class Kept:
    """What the write kept of the file's style, or which rules styled a new file."""

    rules: tuple[str, ...] = ()
    created: bool = False
    refused: str = ""  # a new file: the sentence about a codec its .editorconfig named, not used


def _eol_of(data: bytes, codec: Encoding) -> Eol:
    """The file's line-ending style: on its bytes when its line breaks are single bytes."""
    if codec.unit == 1:
        return line_endings(data)
    return line_endings(codec.decode(data[len(codec.bom) :]))


def _kept(codec: Encoding, eol: Eol, converted: bool) -> tuple[str, ...]:
    """The sentence saying what was kept; none for a plain UTF-8 file (Kimi's message stays)."""
    kept = []
    if not codec.utf8:
        kept.append(f"its encoding {codec.shown}" + (f" (from {codec.source})" if codec.source else ""))
    if codec.bom:
        kept.append("its byte order mark")
    if converted:
        kept.append(
            f"its {eol.upper()} line endings (the content's line breaks were written as {eol.upper()})"
        )
    if not kept:
        return ()
    return ("Kept the file's " + ", ".join(kept).replace("its ", "", 1) + ".",)


def _encoded(params: WholeContent, codec: Encoding, text: str) -> bytes:
    try:
        return codec.encode(text)
    except Unencodable as exc:
        line = text[: text.find(exc.char)].count("\n") + 1
        raise WriteError(
            f"`content` holds {exc.code} ({exc.char!r}, line {line}), which the file's encoding "
            f"{codec.shown} cannot store. Nothing was written.",
            "Character not in the file's encoding",
        ) from None


def _check_placeholders(params: WholeContent, old: str) -> None:
    """SPEC §8.4: an overwrite whose content stands a comment in for code it left out
    ("// ... rest of the code unchanged") would destroy that code; refused."""
    found = find_placeholder(params.content, old)
    if found is None:
        return
    number, line = found
    raise WriteError(
        f"The content stands a placeholder in for left-out text (line {number}: `{escape(line)}`), "
        f"which `{escape(params.path)}` does not hold: overwriting would replace that text with "
        "the placeholder. Nothing was written. Write the whole content, or change only a part "
        "with StrReplaceFile; if the line belongs in the file, write it with WriteFile and "
        "`allow_placeholders: true`.",
        "Placeholder in content",
    )
