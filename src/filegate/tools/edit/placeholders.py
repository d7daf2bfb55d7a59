"""Omission placeholders (SPEC §8.4): the comment a model writes instead of the code it left
out ("// ... rest of the code unchanged"). A whole-file overwrite holding one replaces the
real code with the comment, the most common way a model destroys a file. Pure: text in,
the first such line out.

A line counts only when it is a comment (C-like ``//`` and ``/* */``, ``#``, ``--``, ``;``,
``%``, ``<!-- -->``, JSX ``{/* */}``) or a bracketed marker line (``[...]``, ``(rest of the
file unchanged)``) whose words say something was left out, and only when the file being
overwritten does not hold that very line already: text a file holds never trips the guard.
"""

from __future__ import annotations

import re

# The comment's opening, then its body; the closing (*/, -->, */}) is cut off the body.
_COMMENT = re.compile(
    r"^\s*(?:\{\s*/\*|/\*+|\*|//+|#+|--|;+|%+|<!--|\(\*|rem\s)\s*(?P<body>.*?)\s*(?:\*/\s*\}?|-->|\*\))?\s*$",
    re.IGNORECASE,
)
# A line that is nothing but a bracketed marker: "[...]", "(rest of the file unchanged)".
_MARKER = re.compile(r"^\s*[\[(]\s*(?P<body>[^\[\]()]{1,120}?)\s*[\])]\s*$")

_ELLIPSIS = r"(?:\.{3,}|…)"
_WHAT = (
    r"(?:code|content|contents|file|files|function|functions|method|methods|class|classes|"
    r"implementation|logic|imports?|lines?|tests?|body|section|sections|styles?|rules?|text|"
    r"config(?:uration)?|markup|html|components?|props|fields?|definitions?|cases?|handlers?|"
    r"document|readme|script|program|module|page|chapter|paragraphs?|items?|entries|steps|query|queries|statements?|columns?|keys?|"
    r"values?|options|settings|properties|blocks?|routes?|endpoints?|elements?|children|"
    r"attributes?|slides?|cells?|targets?|recipes?|jobs?)"
)
_OMITTED = (
    r"(?:unchanged|remains?|remain\s+the\s+same|stays?\s+the\s+same|the\s+same|as\s+(?:before|is)|"
    r"here|goes\s+here|omitted|elided|truncated|not\s+shown|left\s+out|for\s+brevity|untouched|"
    r"continues|follows?|unmodified|preserved|kept)"
)
_END = rf"\s*(?:{_OMITTED}\b|{_ELLIPSIS}|$)"
_PHRASES = re.compile(
    "|".join(
        [
            # "... rest of the code unchanged", "rest of file here", "remainder of the class ..."
            rf"\b(?:rest|remainder)\s+of\s+(?:the\s+|this\s+|your\s+)?(?:\w+\s+){{0,2}}?{_WHAT}\b{_END}",
            rf"^{_ELLIPSIS}?\s*(?:the\s+)?rest\s+(?:is\s+|stays\s+|remains\s+)?{_OMITTED}\b",
            # "existing code here", "previous methods unchanged", "... other imports ..."
            rf"\b(?:existing|previous|original|remaining|unchanged|same)\s+(?:\w+\s+){{0,2}}?{_WHAT}\b{_END}",
            rf"\b(?:other|more|additional|old)\s+(?:\w+\s+){{0,2}}?{_WHAT}\b\s*(?:{_OMITTED}\b|{_ELLIPSIS})",
            # "code omitted for brevity", "implementation unchanged"
            rf"\b{_WHAT}\s+(?:is\s+|are\s+|was\s+)?(?:omitted|elided|unchanged|truncated|not\s+shown|"
            rf"left\s+out|stays?\s+the\s+same|remains?\s+(?:the\s+same|unchanged))\b",
            r"\bfor\s+brevity\b",
            r"\bsame\s+as\s+(?:before|above|original|the\s+original)\s*$",
            # a comment that is only an ellipsis, or one word between ellipses: "// ...",
            # "# ...", "<!-- ... -->", "/* ... */", "// ...snip..."
            rf"^{_ELLIPSIS}\s*(?:\w+\s*{_ELLIPSIS})?$",
            r"\bsnip(?:ped)?\b",
        ]
    ),
    re.IGNORECASE,
)


def find_placeholder(new: str, old: str) -> tuple[int, str] | None:
    """The first line of ``new`` (1-based number and its text, stripped) that is an omission
    placeholder and is not a line ``old`` already holds; None when there is none."""
    held: set[str] | None = None
    for number, line in enumerate(new.splitlines(), 1):
        if not _is_placeholder(line):
            continue
        if held is None:  # the old file's lines, made only once a candidate appears
            held = {o.strip() for o in old.splitlines()}
        if line.strip() not in held:
            return number, line.strip()
    return None


def _is_placeholder(line: str) -> bool:
    if len(line) > 200 or not line.strip():  # a placeholder is a short line of its own
        return False
    for pattern in (_COMMENT, _MARKER):
        found = pattern.match(line)
        if found and _PHRASES.search(found.group("body").strip()):
            return True
    return False
