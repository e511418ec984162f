"""Honest messages on small servers: a message too long for the chat window answers 413 with the clear
text; a connection dropped while an answer was read says so."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from django.test import Client

from chat.llm.openai_adapter.errors import as_llm_error as _as_llm_error
from chat.models import Conversation, Message
from tests.chat.test_api import send


@pytest.mark.django_db(transaction=True)
def test_a_message_too_long_for_the_chat_window_answers_413_with_the_clear_text(
    api_client: Client, conversation: Conversation, fake_model: Any, settings: Any
) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 2048, 512
    response = send(api_client, "POST", f"/api/conversations/{conversation.id}/messages", {"content": "word " * 1400})

    assert response.status_code == 413, response.content
    body = response.json()
    assert body["detail"].startswith("This message is too long for the model's context window")
    assert body["assistant_message"]["status"] == "error"
    assert fake_model.requests == []  # nothing was sent to the provider
    assert Message.objects.filter(role="user", conversation=conversation).exists()


def test_a_dropped_connection_says_so() -> None:
    error = _as_llm_error(httpx2.RemoteProtocolError("peer closed connection without sending complete message body"))
    assert error.kind == "connection"
    assert "connection to the model provider was dropped" in str(error)
    assert "could not be read" not in str(error)
