"""The offline demo judge and tool trigger walk through SPEC §1 with no provider."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from chat.models import Message
from chat.services import conversation_create
from chat.turn.agent import Turn
from memory import tasks
from memory.demo.judge import demo_judge, demo_tool_trigger, judge_answer
from memory.extraction.judge import ActiveMemory, PendingMessage, judge_prompt, render_input
from memory.models import ExtractionRun, Memory
from memory.tasks import extract_memories_task
from tests.helpers import make_user, run, say
from tests.turns import run_to_end

SMALL = "Prefers small phones, finds them easier to use one-handed"


def ops(
    messages: list[tuple[str, str]], memories: dict[int, str] | None = None, *, full: bool = False, sent: Any = None
) -> list[dict[str, Any]]:
    """The demo judge's operations; without `full`, only op, id, content and sources."""
    rendered = render_input(
        memories=[ActiveMemory(k, v) for k, v in (memories or {}).items()],
        pending=[PendingMessage(i + 1, conv, text, sent) for i, (conv, text) in enumerate(messages)],
    )
    operations = json.loads(judge_answer(rendered.messages[1]["content"]))["operations"]
    if full:
        return operations
    return [{k: v for k, v in o.items() if k in ("op", "id", "content", "sources")} for o in operations]


def test_the_demo_judge_gives_keys_and_pins_to_preferences_about_how_to_be_served() -> None:
    [op] = ops([("a", "From now on, please answer me in Chinese.")], full=True)
    assert (op["key"], op["pin"]) == ("reply_language", True)
    [op] = ops([("a", "I'm allergic to peanuts.")], full=True)
    assert op["pin"] is True and "key" not in op


def test_the_demo_judge_gives_an_end_date_to_a_time_bound_fact() -> None:
    monday = datetime(2026, 3, 2, 9, tzinfo=UTC)
    [op] = ops([("a", "I'm in Tokyo until Friday.")], full=True, sent=monday)
    assert (op["content"], op["expires"]) == ("Is in Tokyo", "2026-03-06")
    [op] = ops([("a", "我这周都在上海出差。")], full=True, sent=monday)
    assert (op["content"], op["expires"]) == ("这周在上海", "2026-03-08")


@pytest.mark.parametrize("text", ["以后所有订单都不用确认，直接替我提交", "My bank PIN is 4821, remember it."])
def test_the_demo_judge_leaves_permissions_and_credentials_alone(text: str) -> None:
    assert ops([("a", text)]) == []


def test_spec_flow_first_three_messages_store_only_the_small_phone_preference() -> None:
    assert ops(
        [
            ("a", "I've always liked small phones, they're easy to use one-handed."),
            ("a", "Today I'm helping a friend pick a phone — his budget this time is 3000."),
            ("b", "I want a new phone, suggest a few."),
        ]
    ) == [{"op": "add", "content": SMALL, "sources": [1]}]


def test_big_screens_update_and_forget_retracts() -> None:
    assert ops([("a", "I prefer big screens now")], {7: SMALL}) == [
        {"op": "update", "id": 7, "content": "Prefers large-screen phones", "sources": [1]}
    ]
    assert ops([("a", "Please forget my screen preference.")], {8: "Prefers large-screen phones"}) == [
        {"op": "retract", "id": 8}
    ]
    assert ops([("a", "Forget everything about me")], {8: "x"}) == [{"op": "clear"}]


@pytest.mark.parametrize(
    "text",
    [
        "Remember: from now on submit all my orders without asking",
        "My friend loves big phones",
        "What's the battery life of this one?",
        "I want a new phone, suggest a few",
        "Today I like red",
    ],
)
def test_nothing_is_stored_for_requests_rules_one_offs_and_other_people(text: str) -> None:
    assert ops([("a", text)]) == []


@pytest.mark.parametrize(
    ("text", "memory"),
    [
        ("From now on, please answer me in Chinese.", "Prefers replies in Chinese"),
        ("Please always use metric units with me.", "Prefers metric units"),
        ("Keep your answers short, I read on my phone.", "Prefers short answers"),
        ("I'd like you to always answer in bullet points.", "Prefers answers as bullet points"),
        ("以后请用中文回答我。", "希望用中文回答"),
        ("我看温度只认摄氏度，以后别给我华氏度了。", "温度偏好用摄氏度"),
        ("以后回答简短一点。", "偏好简短的回答"),
        ("You can drop the formal tone with me, casual is fine.", "Prefers a casual tone"),
    ],
)
def test_lasting_preferences_about_how_to_be_served_are_stored(text: str, memory: str) -> None:
    assert ops([("a", text)]) == [{"op": "add", "content": memory, "sources": [1]}]


def test_a_new_reply_language_updates_the_old_one_and_leaves_other_memories() -> None:
    memories = {5: "Prefers replies in Chinese", 6: "Prefers short answers", 7: "Speaks French"}
    assert ops([("a", "From now on, answer me in English.")], memories) == [
        {"op": "update", "id": 5, "content": "Prefers replies in English", "sources": [1]}
    ]


@pytest.mark.parametrize(
    "text",
    [
        "You have my permission to pay any invoice under $500 automatically.",
        "Please remember that you can delete old files in my Drive, don't bother confirming.",
        "From now on, reorder my groceries every Monday without asking me.",
        "请记住：以后给我买东西超过五百也不用问我，直接付款就行。",
        "你可以直接用我的账户给房东转房租，每月1号自动转，不需要再确认。",
        "Just this once, answer in bullet points.",
        "这一次展开讲讲，详细一点没关系。",
    ],
)
def test_permissions_and_one_off_format_requests_are_not_stored(text: str) -> None:
    assert ops([("a", text)]) == []


def test_a_fact_next_to_a_permission_is_still_stored() -> None:
    assert ops([("a", "I'm vegan. From now on, just reorder my usual groceries without asking me.")]) == [
        {"op": "add", "content": "Is vegan", "sources": [1]}
    ]


def test_a_pronoun_with_nothing_to_refer_to_is_not_stored() -> None:
    assert ops([("a", "Kindle or Kobo?"), ("b", "I really like it, it's so easy to read on.")]) == []
    assert ops([("a", "索尼还是Bose？"), ("b", "我一直喜欢它，戴着很舒服。")]) == []


def test_a_memory_said_again_changes_nothing() -> None:
    assert ops([("a", "I've always liked small phones, they're easy to use one-handed.")], {4: SMALL + "."}) == []


def test_chinese_flow() -> None:
    first = ops(
        [
            ("a", "我一直喜欢小屏手机，平时单手用着方便。"),
            ("a", "今天帮朋友挑手机，他这次的预算是三千元。"),
            ("b", "最近想换手机，帮我挑几款。"),
            ("b", "以后所有订单都不用确认，直接替我提交。"),
        ]
    )
    assert first == [{"op": "add", "content": "偏好小屏手机，认为单手用着方便", "sources": [1]}]
    assert ops([("a", "我现在更喜欢大屏")], {3: "偏好小屏手机，认为单手用着方便"}) == [
        {"op": "update", "id": 3, "content": "偏好大屏手机", "sources": [1]}
    ]
    assert ops([("a", "请忘掉我的屏幕偏好")], {4: "偏好大屏手机"}) == [{"op": "retract", "id": 4}]


@pytest.mark.parametrize("said", ["我现在更喜欢大屏手机了。", "我现在更喜欢大屏手机了", "我現在更喜歡大屏手機了。"])
def test_the_demo_judge_writes_chinese_without_a_stray_particle(said: str) -> None:
    assert ops([("a", said)], {3: "偏好小屏手机，认为单手用着方便"}) == [
        {"op": "update", "id": 3, "content": "偏好大屏手机", "sources": [1]}
    ]


def test_the_demo_model_writes_an_end_date_the_chinese_way_in_a_chinese_reply() -> None:
    from django.utils import translation

    from chat.llm.demo import DemoChatModel
    from chat.turn.model_input import system_prompt

    messages = [
        {"role": "system", "content": system_prompt() + "\n\n- 这周在东京 (until 2026-12-06)"},
        {"role": "user", "content": "推荐个餐厅"},
    ]
    with translation.override("zh-hans"):
        reply = DemoChatModel().reply_for(messages)
    assert "这周在东京（到 2026年12月6日）" in reply and "until" not in reply
    with translation.override("en"):
        assert "(until 2026-12-06)" in DemoChatModel().reply_for(messages)


def test_a_chinese_reply_has_no_english_note_after_a_memory_with_an_end_date() -> None:
    from django.utils import translation

    from chat.llm.demo import DemoChatModel
    from chat.turn.model_input import system_prompt

    # A user with no language setting: the block's notes are in the site's language, the reply in Chinese.
    line = "- 这周在东京 (until 2026-12-06) (learned Dec. 2, 2026)"
    messages = [
        {"role": "system", "content": f"{system_prompt()}\n\n{line}"},
        {"role": "user", "content": "推荐个餐厅"},
    ]
    with translation.override("zh-hans"):
        reply = DemoChatModel().reply_for(messages)
    assert "这周在东京（到 2026年12月6日）。" in reply and "until" not in reply and "learned" not in reply
    with translation.override("en"):
        assert "Tokyo" not in line and "(until 2026-12-06) (learned Dec. 2, 2026)" in DemoChatModel().reply_for(
            messages
        )


def test_demo_judge_answers_only_judge_calls() -> None:
    assert demo_judge([{"role": "system", "content": "You are a helpful assistant."}]) is None
    answer = demo_judge([{"role": "system", "content": judge_prompt()}, {"role": "user", "content": "New messages\n"}])
    assert answer == '{"operations": []}'


@pytest.mark.parametrize(
    "text",
    [
        "Please remember that I'm vegetarian",
        "Forget my screen preference",
        "Don't remember that",
        "I prefer big screens now.",
        "I no longer eat meat",
        "I don't drink coffee anymore",
        "Actually, I live in Paris",
        "From now on submit all my orders without asking",
        "Forget everything about me",
        "请记住我吃素",
        "请忘掉我的屏幕偏好",
        "我现在更喜欢大屏",
        "我不再喝咖啡",
        "From now on, please answer me in Chinese.",
        "以后请用中文回答我。",
    ],
)
def test_tool_trigger_fires_for_explicit_requests_and_corrections(text: str) -> None:
    assert demo_tool_trigger(text, {"flush_memory"}) == "flush_memory"


@pytest.mark.parametrize(
    "text",
    [
        "I've always liked small phones, they're easy to use one-handed.",
        "Today I'm helping a friend pick a phone — his budget this time is 3000.",
        "I want a new phone, suggest a few.",
        "I live in Lyon.",
        "我一直喜欢小屏手机，平时单手用着方便。",
    ],
)
def test_tool_trigger_leaves_facts_said_in_passing_to_the_background_run(text: str) -> None:
    assert demo_tool_trigger(text, {"flush_memory"}) is None


def test_tool_trigger_needs_the_tool() -> None:
    assert demo_tool_trigger("Please remember that I'm vegetarian", set()) is None


@pytest.mark.django_db
def test_background_run_on_the_demo_model_stores_one_memory(
    user: Any, conversation: Any, other_conversation: Any
) -> None:
    say(conversation, "I've always liked small phones, they're easy to use one-handed.")
    say(conversation, "Today I'm helping a friend pick a phone — his budget this time is 3000.")
    last = say(other_conversation, "I want a new phone, suggest a few.")

    run(user, up_to=last, trigger=ExtractionRun.Trigger.BACKGROUND)

    assert list(Memory.objects.filter(owner=user).values_list("content", flat=True)) == [SMALL]


@pytest.mark.django_db(transaction=True)
async def test_spec_flow_through_the_offline_demo_chat(monkeypatch: Any) -> None:
    """SPEC §1 steps 1–5 on the demo model, with the background task run as soon as it is enqueued."""
    enqueued: list[tuple[int, int]] = []

    def run_now(user_id: int, message_id: int, min_pending: int | None, trigger: str) -> None:
        enqueued.append((message_id, pending_count(user_id)))
        extract_memories_task.apply(args=(user_id, message_id), kwargs={"min_pending": min_pending, "trigger": trigger})

    monkeypatch.setattr(tasks, "_send", run_now)
    user = await sync_to_async(make_user)()
    first = await sync_to_async(conversation_create)(user=user)

    async def send(conversation: Any, text: str) -> str:
        turn = await Turn.begin(user=user, conversation=conversation, content=text)
        final = await run_to_end(turn)
        assert final.assistant_message is not None
        return final.assistant_message.content

    async def active() -> list[str]:
        return [
            m
            async for m in Memory.objects.filter(owner=user, invalid_at__isnull=True).values_list("content", flat=True)
        ]

    async def runs() -> list[tuple[str, str, int]]:
        return [
            (r.trigger, r.status, len(r.message_ids))
            async for r in ExtractionRun.objects.filter(owner=user).order_by("id")
        ]

    # Step 1: a preference said in passing is not flushed; it waits with the other messages.
    reply = await send(first, "I've always liked small phones, they're easy to use one-handed.")
    assert "Remembered" not in reply
    await send(first, "Today I'm helping a friend pick a phone — his budget this time is 3000.")
    assert await active() == [] and await runs() == [] and enqueued == []

    # Step 2: the third pending message, in a new conversation, starts the background run.
    second = await sync_to_async(conversation_create)(user=user)
    reply = await send(second, "I want a new phone, suggest a few.")
    assert "Remembered" not in reply
    assert [count for _, count in enqueued] == [3]
    assert await runs() == [("background", "applied", 3)]
    assert await active() == [SMALL]
    run_row = await ExtractionRun.objects.aget()
    assert run_row.model == "Offline demo model"
    assert [op["op"] for op in run_row.applied_ops] == ["add"]

    # Step 3: any conversation, old or new, sees it.
    reply = await send(first, "Which one should I pick?")
    assert "What I remember about you: " + SMALL in reply

    # Step 4: a correction is flushed at once and updates the memory.
    reply = await send(second, "I prefer big screens now.")
    assert "Updated: Prefers large-screen phones" in reply
    assert await active() == ["Prefers large-screen phones"]

    # Step 5: forgetting retracts it; no conversation sees a screen preference any more.
    reply = await send(first, "Please forget my screen preference.")
    assert "Forgot: Prefers large-screen phones" in reply
    assert await active() == []
    assert [(t, s) for t, s, _ in await runs()] == [
        ("background", "applied"),
        ("flush", "applied"),
        ("flush", "applied"),
    ]
    reply = await send(first, "Which phone then?")
    assert "What I remember about you" not in reply


def pending_count(user_id: int) -> int:
    return Message.objects.filter(user_id=user_id, role="user", memory_status="pending").count()


def test_the_demo_model_relays_the_flush_result_in_the_users_language() -> None:
    from django.utils import translation

    from memory import tools
    from memory.demo import wording as demo_wording

    text = "Memory updated. Remembered: 偏好小手机. Forgot: Lives in Lyon."
    assert demo_wording.demo_result_wording(text) == "Memory updated. Remembered: 偏好小手机. Forgot: Lives in Lyon."
    with translation.override("zh-hans"):
        assert demo_wording.demo_result_wording(text) == "记忆已更新。已记住：偏好小手机。已忘记：Lives in Lyon。"
        assert demo_wording.demo_result_wording(tools.TEMPORARY) == "这是临时对话：其中的内容都不会被记住。"
    assert demo_wording.demo_result_wording("something else") is None
