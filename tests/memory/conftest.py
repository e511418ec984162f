"""Fixtures for the memory tests (helpers they import live in tests/helpers.py)."""

from __future__ import annotations

from typing import Any

import pytest

from chat.models import Conversation
from tests.helpers import make_conversation


@pytest.fixture
def other_conversation(user: Any) -> Conversation:
    return make_conversation(owner=user)
