"""Fixtures shared by the stress tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.stress.procs import Zygote


@pytest.fixture(scope="session")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    """One warm parent that forks stdio servers for every test that needs many (see procs)."""
    z = Zygote(tmp_path_factory.mktemp("fifos"))
    yield z
    z.close()
