"""A reply's text is storable and bounded: lone UTF-16 surrogates from a provider are repaired (a split
pair joined again), the turn ends with what arrived and the conversation takes the next message; a reply
past CHAT_REPLY_MAX_CHARS ends there, saved with a note."""

from __future__ import annotations

from typing import Any

import pytest

from accounts.models import User
from accounts.services import api_token_create
from chat.models import Conversation, Message
from chat.turn.reply_text import ReplyText, repaired
from tests.chat.test_api_sse import post
from tests.fake_openai import FakeOpenAIServer, FakeResponse


@pytest.fixture
def token(user: User) -> str:
    return api_token_create(user=user)[1]


def test_lone_surrogates_are_replaced_and_pairs_kept() -> None:
    assert repaired("a\ud800b") == "a\ufffdb"
    assert repaired("\ud83d\ude00") == "😀"
    assert repaired("plain 中文") == "plain 中文"


def test_a_pair_split_across_two_pieces_is_joined() -> None:
    reply = ReplyText()
    assert reply.piece("smile \ud83d") == "smile "
    assert reply.piece("\ude00!") == "😀!"
    assert reply.piece("\udc00 alone") == "\ufffd alone"


def test_the_piece_that_reaches_the_limit_is_cut_there(settings: Any) -> None:
    settings.CHAT_REPLY_MAX_CHARS = 10
    reply = ReplyText()
    assert reply.piece("123456") == "123456" and not reply.full
    assert reply.piece("789012") == "7890" and reply.full


@pytest.mark.django_db(transaction=True)
async def test_a_reply_with_a_lone_surrogate_is_saved_and_the_next_message_accepted(
    fake_openai: FakeOpenAIServer, token: str, conversation: Conversation
) -> None:
    fake_openai.queue(
        FakeResponse(chunks=["Broken \ud800 text, ", "split \ud83d", "\ude00 pair"]), FakeResponse("Next.")
    )
    events = (await post(conversation.id, token)).events()
    assert events[-1][0] == "done"
    saved = events[-1][1]["assistant_message"]
    assert (saved["status"], saved["content"]) == ("complete", "Broken \ufffd text, split 😀 pair")
    message = await Message.objects.aget(pk=saved["id"])
    assert message.content == "Broken \ufffd text, split 😀 pair"
    assert (await post(conversation.id, token, content="Again")).events()[-1][0] == "done"


@pytest.mark.django_db(transaction=True)
async def test_a_reply_past_the_limit_ends_there_saved_with_a_note(
    fake_model: Any, token: str, conversation: Conversation, settings: Any
) -> None:
    settings.CHAT_REPLY_MAX_CHARS = 20
    fake_model.reply("a" * 15, "b" * 15, "c" * 15)
    fake_model.reply("Short.")
    events = (await post(conversation.id, token)).events()
    assert [name for name, _ in events] == ["start", "delta", "delta", "error"]
    saved = await Message.objects.aget(pk=events[-1][1]["assistant_message"]["id"])
    assert saved.content == "a" * 15 + "b" * 5
    assert saved.status == Message.Status.ERROR and "20-character limit" in saved.error
    assert (await post(conversation.id, token, content="Again")).events()[-1][0] == "done"
