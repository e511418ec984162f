"""Helpers for the memory tests: messages as chat saves them, and a pipeline shortcut."""

from __future__ import annotations

from typing import Any, cast

import pytest

from accounts.models import User
from chat.models import Conversation, Message
from memory import pipeline
from memory.models import ExtractionRun, Memory
from tests.factories import ConversationFactory, MemoryFactory, MessageFactory, UserFactory


# Typed wrappers: factory_boy has no type information.
def make_user(**kwargs: Any) -> User:
    return cast(User, UserFactory(**kwargs))


def make_conversation(**kwargs: Any) -> Conversation:
    return cast(Conversation, ConversationFactory(**kwargs))


def make_message(**kwargs: Any) -> Message:
    return cast(Message, MessageFactory(**kwargs))


def make_memory(**kwargs: Any) -> Memory:
    return cast(Memory, MemoryFactory(**kwargs))


def say(conversation: Conversation, text: str, *, reply: str = "Sure, noted.") -> Message:
    """A user message (pending, as chat saves it) followed by the assistant's reply."""
    message = make_message(conversation=conversation, role=Message.Role.USER, content=text)
    make_message(conversation=conversation, role=Message.Role.ASSISTANT, content=reply)
    return message


def run(
    user: Any, *, up_to: Message | None = None, trigger: str = ExtractionRun.Trigger.FLUSH, **kwargs: Any
) -> pipeline.Result:
    params = pipeline.extraction_params(trigger=trigger)
    params.update(kwargs)
    return pipeline.extract(user_id=user.pk, trigger=trigger, up_to_message_id=up_to.pk if up_to else None, **params)


@pytest.fixture
def conversation(user: Any) -> Conversation:
    return make_conversation(owner=user)


@pytest.fixture
def other_conversation(user: Any) -> Conversation:
    return make_conversation(owner=user)
