"""libmagic is really loaded where the system has it (SPEC §3: content sniffed by libmagic).

filegate falls back to its own signature table when libmagic cannot be loaded, silently, so
that a machine without libmagic1 still works; this test makes sure the fallback is not what
the rest of the suite is quietly testing on a machine (or CI) that has the library.
"""

from __future__ import annotations

import ctypes.util
import os

import pytest

from filegate.policy import filetype


def test_libmagic_answers_where_the_system_library_is_installed() -> None:
    if ctypes.util.find_library("magic") is None:
        if os.environ.get("CI"):
            pytest.fail("CI must have libmagic1: .ci/run installs it")
        pytest.skip("libmagic1 is not installed on this machine (filegate uses its own signature table)")
    # A shell script: only libmagic names it; the fallback table would say nothing.
    assert filetype._libmagic_mime(b"#!/bin/sh\necho hi\n") == "text/x-shellscript"
    assert filetype.sniff_signature(b"#!/bin/sh\necho hi\n") is None
