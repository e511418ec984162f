"""Which of a client's messages are new (the digest of the history up to each user message), and where
Memora's block goes among the client's messages."""

from __future__ import annotations

from typing import Any

import pytest

from connect.completions import with_block
from connect.history import user_digests

pytestmark = pytest.mark.needs_memory


def test_the_same_history_digests_the_same_whatever_the_system_message_says() -> None:
    first = [{"role": "system", "content": "Today is Monday."}, {"role": "user", "content": "Hi"}]
    later: list[dict[str, Any]] = [
        {"role": "system", "content": "Today is Tuesday."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": [{"type": "text", "text": "Tea?"}, {"type": "image_url", "image_url": {}}]},
    ]
    assert user_digests(later)[0] == user_digests(first)[0]
    assert [text for _, text in user_digests(later)] == ["Hi", "Tea?"]


def test_the_same_words_after_another_history_are_a_new_message() -> None:
    one = user_digests([{"role": "user", "content": "yes"}])
    two = user_digests([{"role": "user", "content": "Coffee?"}, {"role": "assistant", "content": "Sure"},
                        {"role": "user", "content": "yes"}])  # fmt: skip
    assert one[0][0] != two[1][0]


def test_the_block_goes_after_the_clients_own_system_messages() -> None:
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert [m["content"] for m in with_block(messages, "BLOCK")] == ["Be brief.", "BLOCK", "Hi"]
    assert with_block(messages, None) == messages
