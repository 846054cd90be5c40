"""Fixtures of the end-to-end operator suite (see harness.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.integration.operator.harness import Cluster


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with Cluster.start() as c:
        yield c
