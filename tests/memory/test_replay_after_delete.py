"""After a permanent delete nothing replayed to the model carries the memory (SPEC §9, memory.replay):
not search_history's results, not the turn that taught it (reworded), in that conversation or another.
Checked by scanning every request the provider receives afterwards."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from chat.models import Message
from chat.services import conversation_create
from chat.turn.agent import Turn
from memory import forgetting, services
from memory.models import Memory
from memory.replay import LEARNED_FROM
from tests.helpers import make_user
from tests.turns import run_to_end

SENTENCE = "Is allergic to kiwifruit."
PARAPHRASE = "Noted, kiwis are off the menu for you."
WORDS = ("kiwi", "Kiwi")


def _requests_text(requests: list[dict[str, Any]]) -> str:
    return json.dumps([r["messages"] for r in requests], ensure_ascii=False)


@pytest.mark.django_db(transaction=True)
async def test_after_a_delete_no_request_carries_the_memory_or_its_paraphrase(fake_model: Any) -> None:
    assert "replay" in forgetting.redactors()
    user = await sync_to_async(make_user)()
    learned_in = await sync_to_async(conversation_create)(user=user)
    fake_model.call_tool("flush_memory")
    fake_model.judge({"operations": [{"op": "add", "content": SENTENCE, "sources": [1]}]})
    fake_model.reply(PARAPHRASE)
    taught = await Turn.begin(user=user, conversation=learned_in, content="Remember that I'm allergic to kiwifruit.")
    assert (await run_to_end(taught)).type == "done"
    memory = await Memory.objects.aget(owner=user, content=SENTENCE)
    # Another conversation quotes it, and is found by search before the delete.
    elsewhere = await sync_to_async(conversation_create)(user=user)
    fake_model.reply(f"You told me before: {SENTENCE} So no kiwi salad.")
    await run_to_end(await Turn.begin(user=user, conversation=elsewhere, content="Fruit salad ideas with kiwifruit?"))

    await sync_to_async(services.memory_delete)(user=user, memory=memory)
    seen = len(fake_model.requests)

    # The conversation that learned it goes on: its earlier turn is not replayed, reworded or not.
    fake_model.reply("Apples and pears.")
    await run_to_end(await Turn.begin(user=user, conversation=learned_in, content="Which fruit should I buy?"))
    # A third conversation searches the history for it.
    third = await sync_to_async(conversation_create)(user=user)
    fake_model.call_tool("search_history", '{"query": "kiwifruit"}')
    fake_model.reply("I found nothing about that.")
    await run_to_end(await Turn.begin(user=user, conversation=third, content="What did I say about kiwifruit?"))

    after = fake_model.requests[seen:]
    text = _requests_text(after)
    assert len(after) >= 3 and "allergic" not in text and "off the menu" not in text
    in_learned_in = _requests_text(after[:1])  # the turn there replays no word of the teaching turn
    assert not any(word in in_learned_in for word in WORDS) and LEARNED_FROM in in_learned_in
    assert "[message" in text  # search still found the user's own, unrelated words elsewhere
    # The page still shows what was said.
    shown = [m.content async for m in Message.objects.filter(conversation=learned_in)]
    assert PARAPHRASE in shown
