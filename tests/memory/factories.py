"""The memory app's factories (apart from tests/factories.py: the chat and accounts tests also run
without the memory app installed)."""

from __future__ import annotations

import factory

from tests.factories import UserFactory


class MemoryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "memory.Memory"

    owner = factory.SubFactory(UserFactory)
    content = factory.Sequence(lambda n: f"Remembered fact number {n}.")
    origin = "extracted"
