from __future__ import annotations

import factory

from accounts.models import User
from chat.models import AgentState, Conversation, Message


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("correct-horse-battery")


class ConversationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Conversation
        skip_postgeneration_save = True

    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda n: f"Conversation {n}")
    agent_state = factory.RelatedFactory("tests.factories.AgentStateFactory", factory_related_name="conversation")


class AgentStateFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AgentState

    conversation = factory.SubFactory(ConversationFactory, agent_state=None)


class MessageFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Message

    conversation = factory.SubFactory(ConversationFactory)
    user = factory.LazyAttribute(lambda m: m.conversation.owner)
    role = Message.Role.USER
    content = factory.Sequence(lambda n: f"message {n}")
    memory_status = factory.LazyAttribute(lambda m: Message.MemoryStatus.PENDING if m.role == Message.Role.USER else "")
