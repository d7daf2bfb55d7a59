"""Spliced: a base with one span replaced answers as the joined bytes would (issue 13.3)."""

from __future__ import annotations

import hashlib
import itertools

import blake3
import pytest
from hypothesis import given
from hypothesis import strategies as st

from filegate.fsio.spliced import Spliced, content_hash, content_pieces


def cases() -> list[tuple[bytes, int, int, bytes]]:
    base = b"ab\ncd\n\nef"
    spans = [(s, e) for s in range(len(base) + 1) for e in range(s, len(base) + 1)]
    return [(base, s, e, m) for (s, e), m in itertools.product(spans, [b"", b"\n", b"X\nY"])]


@pytest.mark.parametrize(("base", "start", "end", "middle"), cases()[::7])
def test_every_question_is_answered_as_the_joined_bytes_would(
    base: bytes, start: int, end: int, middle: bytes
) -> None:
    sp, ref = Spliced(base, start, end, middle), base[:start] + middle + base[end:]
    assert (len(sp), bytes(sp), sp == ref, sp.equals(ref)) == (len(ref), ref, True, True)
    assert b"".join(content_pieces(sp)) == ref and all(len(p) for p in sp.pieces())
    assert content_hash(sp) == content_hash(ref)
    for i, j in itertools.product(range(-2, len(ref) + 3), repeat=2):
        assert sp[i:j] == ref[i:j]
        assert sp.count(b"\n", i, j) == ref.count(b"\n", i, j)
        assert sp.find(b"\n", i, j) == ref.find(b"\n", i, j)
        assert sp.endswith(b"\n", i, j) == ref.endswith(b"\n", i, j)
    for i in range(len(ref) + 2):
        assert sp.startswith(b"d\n", i) == ref.startswith(b"d\n", i)


def test_different_content_is_unequal_whatever_the_base() -> None:
    base = b"one\ntwo\n"
    sp = Spliced(base, 4, 7, b"TWO")
    assert sp != base and sp != b"one\ntwo\nx" and sp == b"one\nTWO\n"
    assert not sp.equals(b"one\nTWx\n") and not sp.equals(b"ONE\nTWO\n")
    assert Spliced(base, 4, 7, b"two").equals(base)  # the same bytes spliced in: equal
    assert sp == Spliced(b"one\nTWO\n", 0, 0, b"")
    assert repr(sp) == "Spliced(8 bytes, [4:7] -> 3 bytes)"  # never the content


def test_misuse_is_refused_not_answered_wrongly() -> None:
    with pytest.raises(ValueError):
        Spliced(b"abc", 2, 1, b"")
    with pytest.raises(ValueError):
        Spliced(b"abc", 0, 4, b"")
    sp = Spliced(b"a\r\nb", 1, 1, b"\r")
    with pytest.raises(ValueError):
        sp.count(b"\r\n")  # could straddle pieces: one byte at a time only
    with pytest.raises(TypeError):
        sp[::2]


@given(st.binary(max_size=300), st.data())
def test_a_splice_hashes_as_its_bytes_in_either_algorithm(base: bytes, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(base)))
    end = data.draw(st.integers(start, len(base)))
    sp = Spliced(base, start, end, data.draw(st.binary(max_size=40)))
    assert content_hash(sp) == blake3.blake3(bytes(sp)).hexdigest() == content_hash(bytes(sp), "blake3")
    assert content_hash(sp, "sha256") == hashlib.sha256(bytes(sp)).hexdigest()
