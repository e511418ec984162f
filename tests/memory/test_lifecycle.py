"""A memory's life (SPEC §8): end dates, suggestions, sensitive facts, refused credentials and permission
grants, one value per single-valued preference."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.utils import timezone

from accounts.models import User
from chat.extensions import TurnContext
from memory import lexicon, lifecycle, services
from memory.context import memory_block
from memory.models import ExtractionRun, Memory, MemoryKey
from memory.selectors import memories_active
from tests.helpers import make_conversation, make_memory, make_message, make_user, run, say

pytestmark = pytest.mark.django_db


def answer(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"operations": list(ops)}


def add(content: str, **extra: Any) -> dict[str, Any]:
    return {"op": "add", "content": content, "sources": [1], **extra}


def active(user: User) -> list[str]:
    return list(memories_active(user_id=user.pk).values_list("content", flat=True))


def memory_block_for(user: User, about: str) -> str:
    """The block of a turn whose message is about `about` (so relevance never hides the memory)."""
    conversation = make_conversation(owner=user)
    message = make_message(conversation=conversation, content=about)
    return memory_block(TurnContext(user=user, conversation=conversation, user_message=message)) or ""


def last_run(user: User) -> ExtractionRun:
    return ExtractionRun.objects.filter(owner=user).order_by("-pk").first()  # type: ignore[return-value]


# --- end dates -----------------------------------------------------------------------------------


def test_the_judges_end_date_is_stored_as_the_end_of_that_day_utc(
    fake_model: Any, user: User, conversation: Any
) -> None:
    message = say(conversation, "I'm in Tokyo until Friday.")
    day = message.created_at.astimezone(UTC).date() + timedelta(days=3)
    fake_model.judge(answer(add("Is in Tokyo.", expires=day.isoformat())))

    run(user, up_to=message)

    memory = Memory.objects.get(owner=user)
    assert memory.expires_at == datetime(day.year, day.month, day.day, 23, 59, 59, tzinfo=UTC)
    shown = fake_model.judge_requests[0]["messages"][-1]["content"]
    assert f"Today (UTC): {message.created_at.astimezone(UTC).date().isoformat()}" in shown


@pytest.mark.parametrize("days", [0, -2, 5 * 366 + 1])
def test_an_end_date_not_after_the_message_or_beyond_five_years_is_dropped_with_a_reason(
    fake_model: Any, user: User, conversation: Any, days: int
) -> None:
    message = say(conversation, "I'm in Tokyo until Friday.")
    day = message.created_at.astimezone(UTC).date() + timedelta(days=days)
    fake_model.judge(answer(add("Is in Tokyo.", expires=day.isoformat())))

    run(user, up_to=message)

    assert not Memory.objects.filter(owner=user).exists()
    [dropped] = last_run(user).dropped_ops
    assert "end date" in dropped["reason"]


def test_a_malformed_end_date_is_dropped_not_the_batch(fake_model: Any, user: User, conversation: Any) -> None:
    message = say(conversation, "I'm in Tokyo until Friday.")
    fake_model.judge(answer(add("Is in Tokyo.", expires="Friday"), add("Likes sushi.")))
    run(user, up_to=message)
    assert active(user) == ["Likes sushi."]
    assert "YYYY-MM-DD" in last_run(user).dropped_ops[0]["reason"]


def test_an_end_date_set_seconds_ahead_takes_the_memory_out_of_the_block_then_the_sweep_moves_it_to_history(
    api_client: Client, user: User
) -> None:
    memory = make_memory(owner=user, content="Is in Tokyo.")
    soon = timezone.now() + timedelta(seconds=2)
    response = api_client.patch(f"/api/memories/{memory.pk}", {"expires_at": soon.isoformat()}, "application/json")
    assert response.status_code == 200 and response.json()["id"] == memory.pk  # no new version
    assert "Is in Tokyo." in memory_block_for(user, "Is in Tokyo.")

    later = soon + timedelta(seconds=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timezone, "now", lambda: later)
        assert "Is in Tokyo." not in memory_block_for(user, "Is in Tokyo.")
        assert lifecycle.memories_expire(now=later) == 1
    memory.refresh_from_db()
    assert (memory.invalid_reason, memory.invalid_at) == ("expired", memory.expires_at)
    restored = services.memory_restore(user=user, memory=memory)
    assert restored.expires_at is None and active(user) == ["Is in Tokyo."]


def test_patch_expires_at_must_be_in_the_future_and_null_clears_it(api_client: Client, user: User) -> None:
    memory = make_memory(owner=user, content="Is in Tokyo.", expires_at=timezone.now() + timedelta(days=2))
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    response = api_client.patch(f"/api/memories/{memory.pk}", {"expires_at": past}, "application/json")
    assert response.status_code == 400 and "future" in response.json()["detail"]
    response = api_client.patch(f"/api/memories/{memory.pk}", {"expires_at": None}, "application/json")
    assert response.status_code == 200 and response.json()["expires_at"] is None
    response = api_client.patch(f"/api/memories/{memory.pk}", {"expires_at": "soon"}, "application/json")
    assert response.status_code in (400, 422)


def test_patch_pins_in_place_and_content_makes_a_new_version_that_keeps_the_pin(api_client: Client, user: User) -> None:
    memory = make_memory(owner=user, content="Allergic to peanuts.")
    response = api_client.patch(f"/api/memories/{memory.pk}", {"pinned": True}, "application/json")
    assert response.json()["pinned"] is True and response.json()["id"] == memory.pk
    response = api_client.patch(f"/api/memories/{memory.pk}", {"content": "Allergic to all nuts."}, "application/json")
    body = response.json()
    assert body["id"] != memory.pk and body["pinned"] is True and body["supersedes"] == memory.pk


# --- suggestions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "flag"),
    [
        ("Is diabetic.", True),  # flagged by the judge
        ("Is diabetic.", False),  # recognised by the server
        ("有糖尿病。", False),
        ("Earns 80,000 a year.", False),
        ("是基督徒。", False),
    ],
)
def test_under_the_default_a_sensitive_fact_waits_and_is_never_in_the_block(
    fake_model: Any, user: User, conversation: Any, content: str, flag: bool
) -> None:
    message = say(conversation, "Some background about me: " + content)
    fake_model.judge(answer(add(content, **({"sensitive": True} if flag else {}))))

    run(user, up_to=message)

    memory = Memory.objects.get(owner=user)
    assert memory.suggested and memory.sensitive
    assert active(user) == [] and content not in memory_block_for(user, content)


def test_under_the_default_an_ordinary_fact_is_active(fake_model: Any, user: User, conversation: Any) -> None:
    message = say(conversation, "I wear glasses.")
    fake_model.judge(answer(add("Wears glasses.")))
    run(user, up_to=message)
    assert active(user) == ["Wears glasses."]


def test_all_makes_every_learned_fact_wait_and_auto_none(fake_model: Any, conversation: Any, user: User) -> None:
    user.memory_review = "all"
    user.save()
    message = say(conversation, "I wear glasses.")
    fake_model.judge(answer(add("Wears glasses."), add("Is diabetic.")))
    run(user, up_to=message)
    assert active(user) == [] and Memory.objects.filter(owner=user, suggested=True).count() == 2

    other = make_user(username="bob", memory_review="auto")
    other_message = say(conversation_for(other), "I'm diabetic.")
    fake_model.judge(answer(add("Is diabetic.")))
    run(other, up_to=other_message)
    assert active(other) == ["Is diabetic."]


def conversation_for(user: User) -> Any:
    return make_conversation(owner=user)


@pytest.mark.parametrize(
    "text", ["Please remember that I'm diabetic.", "请记住：我有糖尿病。", "From now on, note I'm diabetic."]
)
def test_an_explicit_request_is_active_at_once_in_every_mode(
    fake_model: Any, user: User, conversation: Any, text: str
) -> None:
    user.memory_review = "all"
    user.save()
    message = say(conversation, text)
    fake_model.judge(answer(add("Is diabetic.")))
    run(user, up_to=message)
    memory = Memory.objects.get(owner=user)
    assert not memory.suggested and memory.sensitive and active(user) == ["Is diabetic."]


def test_a_flush_alone_is_not_explicit(fake_model: Any, user: User, conversation: Any) -> None:
    message = say(conversation, "I'm diabetic, what can I eat for breakfast?")
    fake_model.judge(answer(add("Is diabetic.")))
    run(user, up_to=message, trigger="flush")
    assert Memory.objects.get(owner=user).suggested


def test_keep_and_discard_through_the_api(api_client: Client, user: User, other_user: User) -> None:
    kept = make_memory(owner=user, content="Is diabetic.", suggested=True, sensitive=True)
    dropped = make_memory(owner=user, content="Is pregnant.", suggested=True, sensitive=True)
    listed = api_client.get("/api/memories?status=suggested").json()
    assert [m["status"] for m in listed] == ["suggested", "suggested"]
    assert api_client.get("/api/memories").json() == []

    response = api_client.post(f"/api/memories/{kept.pk}/confirm")
    assert response.status_code == 200 and response.json()["status"] == "active"
    assert api_client.delete(f"/api/memories/{dropped.pk}").status_code == 204
    assert active(user) == ["Is diabetic."] and not Memory.objects.filter(pk=dropped.pk).exists()
    assert api_client.post(f"/api/memories/{kept.pk}/confirm").status_code == 409  # no longer a suggestion

    theirs = make_memory(owner=other_user, content="Is diabetic.", suggested=True)
    assert api_client.post(f"/api/memories/{theirs.pk}/confirm").status_code == 404
    assert api_client.patch(f"/api/memories/{theirs.pk}", {"pinned": True}, "application/json").status_code == 404
    assert api_client.post("/api/memories/999999/confirm").status_code == 404


def test_status_all_lists_active_invalid_and_suggested(api_client: Client, user: User) -> None:
    make_memory(owner=user, content="A.")
    make_memory(owner=user, content="B.", invalid_at=timezone.now(), invalid_reason="retracted")
    make_memory(owner=user, content="C.", suggested=True)
    statuses = sorted(m["status"] for m in api_client.get("/api/memories?status=all").json())
    assert statuses == ["active", "invalid", "suggested"]
    assert api_client.get("/api/memories?status=nope").status_code == 422


def test_a_suggested_update_keeps_the_old_version_until_kept_and_shows_old_to_new(
    fake_model: Any, user: User, conversation: Any
) -> None:
    old = make_memory(owner=user, content="Is pre-diabetic.")
    message = say(conversation, "The doctor says I'm diabetic now.")
    fake_model.judge(answer({"op": "update", "id": old.pk, "content": "Is diabetic.", "sources": [1]}))
    run(user, up_to=message)

    suggestion = Memory.objects.get(owner=user, suggested=True)
    assert active(user) == ["Is pre-diabetic."]
    client = Client()
    client.force_login(user)
    body = client.get(f"/api/memories/{suggestion.pk}").json()
    assert (body["status"], body["supersedes"]) == ("suggested", old.pk)

    services.memory_confirm(user=user, memory=suggestion)
    old.refresh_from_db()
    assert active(user) == ["Is diabetic."]
    assert (old.invalid_reason, old.superseded_by_id) == ("updated", suggestion.pk)


def test_discarding_a_suggested_update_leaves_the_old_version_active(user: User) -> None:
    old = make_memory(owner=user, content="Is pre-diabetic.")
    suggestion = make_memory(owner=user, content="Is diabetic.", suggested=True)
    Memory.objects.filter(pk=old.pk).update(superseded_by=suggestion)
    services.memory_delete(user=user, memory=suggestion)
    old.refresh_from_db()
    assert active(user) == ["Is pre-diabetic."] and old.superseded_by_id is None


def test_a_retract_applies_at_once_even_under_review(fake_model: Any, user: User, conversation: Any) -> None:
    user.memory_review = "all"
    user.save()
    old = make_memory(owner=user, content="Lives in Lyon.")
    message = say(conversation, "I moved, Lyon is over.")
    fake_model.judge(answer({"op": "retract", "id": old.pk}))
    run(user, up_to=message)
    assert active(user) == []


def test_the_sweep_deletes_unanswered_suggestions_after_the_configured_days(user: User, settings: Any) -> None:
    settings.MEMORY_SUGGESTION_DAYS = 14
    fresh = make_memory(owner=user, content="Is diabetic.", suggested=True)
    stale = make_memory(owner=user, content="Is pregnant.", suggested=True)
    Memory.objects.filter(pk=stale.pk).update(created_at=timezone.now() - timedelta(days=15))
    assert lifecycle.suggestions_expire(now=timezone.now()) == 1
    assert list(Memory.objects.filter(owner=user).values_list("pk", flat=True)) == [fresh.pk]


def test_patch_me_sets_memory_review(api_client: Client, user: User) -> None:
    response = api_client.patch("/api/me", {"memory_review": "all"}, "application/json")
    assert response.status_code == 200 and response.json()["memory_review"] == "all"
    assert api_client.patch("/api/me", {"memory_review": "sometimes"}, "application/json").status_code == 422


# --- refused by code ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "secret"),
    [
        ("Email password is hunter2-Blue", "hunter2-Blue"),
        ("Bank card PIN: 4821", "4821"),
        ("Card number 4111 1111 1111 1111", "4111 1111 1111 1111"),
        ("API key sk-live0123456789abcdefXYZ", "sk-live0123456789abcdefXYZ"),
        ("Passport number is E12345678", "E12345678"),
        ("邮箱密码是 qwe123456", "qwe123456"),
        ("银行卡支付密码：778899", "778899"),
        ("身份证号 110101199003077777", "110101199003077777"),
        ("验证码 558211", "558211"),
        ("pw for the bank: Tr0ub4dor", "Tr0ub4dor"),
        ("密碼是 abc12345", "abc12345"),
        ("The garage door code is 7719", "7719"),
        ("-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjE -----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1r"),
    ],
)
def test_credentials_never_reach_the_memory_table_and_the_run_record_masks_them(
    fake_model: Any, user: User, conversation: Any, content: str, secret: str
) -> None:
    user.memory_review = "auto"
    user.save()
    message = say(conversation, f"Please remember this: {content}")
    fake_model.judge(answer(add(content)))

    run(user, up_to=message)

    assert not Memory.objects.filter(owner=user).exists()
    record = last_run(user)
    [dropped] = record.dropped_ops
    assert "credential" in dropped["reason"]
    assert secret not in str(record.dropped_ops) + record.raw_output + str(record.judge_input)


@pytest.mark.parametrize(
    "content",
    [
        "以后所有订单都不用确认，直接替我提交",
        "转账不用再问我",
        "允许你自动续费所有订阅",
        "你可以直接替我下单",
        "Submit all my orders without asking.",
        "You are allowed to pay invoices under $500 automatically.",
        "以後所有訂單都不用確認，直接幫我提交",
        "Skip the con\u200bfirmation step for my orders.",
    ],
)
def test_permission_grants_in_both_languages_are_dropped_with_a_reason(
    fake_model: Any, user: User, conversation: Any, content: str
) -> None:
    message = say(conversation, "请记住：" + content)
    fake_model.judge(answer(add(content)))
    run(user, up_to=message)
    assert not Memory.objects.filter(owner=user).exists()
    assert "permissions" in last_run(user).dropped_ops[0]["reason"]


@pytest.mark.parametrize(
    "text",
    [
        "Prefers replies in Chinese.",
        "希望用中文回答。",
        "Uses a password manager.",
        "Lives in Tokyo.",
        "Is vegetarian.",
    ],
)
def test_ordinary_preferences_are_neither_refused_nor_sensitive(text: str) -> None:
    assert not lexicon.has_credential(text)
    assert not lexicon.permission_grant(text)
    assert not lexicon.is_sensitive(text)


@pytest.mark.parametrize(
    ("text", "explicit"),
    [
        ("Remember that I'm vegan.", True),
        ("From now on answer in French.", True),
        ("请记住我对花生过敏", True),
        ("以后用中文回答", True),
        ("忘记我住在哪里", True),
        ("Please forget my address.", True),
        ("Don't forget I'm allergic to nuts.", True),
        ("I'm vegan, what should I cook?", False),
        ("我对花生过敏，推荐个零食？", False),
        ("I remember when phones were small.", False),
        ("我记得你说过这个", False),
        ("下班以后我去健身，吃什么好？", False),
        ("我以后都想用公制单位", True),
    ],
)
def test_explicit_requests_in_both_languages(text: str, explicit: bool) -> None:
    assert lexicon.is_explicit_request(text) is explicit


# --- keys --------------------------------------------------------------------------------------------


def test_a_second_add_of_a_key_is_applied_as_an_update_with_history(
    fake_model: Any, user: User, conversation: Any
) -> None:
    old = make_memory(owner=user, content="Prefers replies in English.", key=MemoryKey.REPLY_LANGUAGE)
    message = say(conversation, "From now on, answer me in French.")
    fake_model.judge(answer(add("Prefers replies in French.", key="reply_language", pin=True)))

    run(user, up_to=message)

    new = Memory.objects.get(owner=user, invalid_at__isnull=True)
    old.refresh_from_db()
    assert (new.content, new.key, new.pinned) == ("Prefers replies in French.", "reply_language", True)
    assert (old.invalid_reason, old.superseded_by_id) == ("updated", new.pk)
    assert last_run(user).applied_ops[0]["op"] == "update"


def test_the_database_refuses_two_active_values_of_one_key(user: User) -> None:
    make_memory(owner=user, content="Prefers metric units.", key=MemoryKey.UNITS)
    make_memory(owner=user, content="Prefers imperial units.", key=MemoryKey.UNITS, suggested=True)  # waits beside
    with pytest.raises(IntegrityError), transaction.atomic():
        make_memory(owner=user, content="Prefers imperial units!", key=MemoryKey.UNITS)


def test_keeping_a_suggested_keyed_value_supersedes_the_active_one(user: User) -> None:
    current = make_memory(owner=user, content="Prefers metric units.", key=MemoryKey.UNITS)
    suggestion = make_memory(owner=user, content="Prefers imperial units.", key=MemoryKey.UNITS, suggested=True)
    services.memory_confirm(user=user, memory=suggestion)
    current.refresh_from_db()
    assert active(user) == ["Prefers imperial units."]
    assert (current.invalid_reason, current.superseded_by_id) == ("updated", suggestion.pk)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_keeps_of_two_values_of_one_key_leave_one_active(user: User) -> None:
    make_memory(owner=user, content="Prefers metric units.", key=MemoryKey.UNITS)
    suggestions = [
        make_memory(owner=user, content=f"Prefers units, variant {i}.", key=MemoryKey.UNITS, suggested=True)
        for i in range(6)
    ]
    barrier = threading.Barrier(len(suggestions))
    errors: list[Exception] = []

    def keep(memory: Memory) -> None:
        try:
            barrier.wait()
            services.memory_confirm(user=user, memory=memory)
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=keep, args=(m,)) for m in suggestions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert memories_active(user_id=user.pk).filter(key=MemoryKey.UNITS).count() == 1
    assert Memory.objects.filter(owner=user, key=MemoryKey.UNITS, invalid_reason="updated").count() == 6


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_run_and_a_keep_at_once_leave_one_active_value(fake_model: Any, user: User, conversation: Any) -> None:
    suggestion = make_memory(owner=user, content="Prefers imperial units.", key=MemoryKey.UNITS, suggested=True)
    message = say(conversation, "From now on use metric units.")
    fake_model.judge(answer(add("Prefers metric units.", key="units")))
    barrier = threading.Barrier(2)

    def keep() -> None:
        try:
            barrier.wait()
            services.memory_confirm(user=user, memory=suggestion)
        finally:
            connection.close()

    def extract() -> None:
        try:
            barrier.wait()
            run(user, up_to=message)
        finally:
            connection.close()

    threads = [threading.Thread(target=keep), threading.Thread(target=extract)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert memories_active(user_id=user.pk).filter(key=MemoryKey.UNITS).count() == 1
    assert Memory.objects.filter(owner=user, key=MemoryKey.UNITS, invalid_at__isnull=False).count() == 1


def test_the_workers_sweep_expires_memories_and_deletes_stale_suggestions(user: User) -> None:
    from memory.tasks import sweep_extractions_task

    ended = make_memory(owner=user, content="Is in Tokyo.", expires_at=timezone.now() - timedelta(seconds=1))
    stale = make_memory(owner=user, content="Is diabetic.", suggested=True)
    Memory.objects.filter(pk=stale.pk).update(created_at=timezone.now() - timedelta(days=30))

    sweep_extractions_task()

    ended.refresh_from_db()
    assert ended.invalid_reason == "expired" and not Memory.objects.filter(pk=stale.pk).exists()


def test_the_flush_tool_never_says_a_suggestion_was_remembered(fake_model: Any, user: User, conversation: Any) -> None:
    from memory.tools import result_sentence

    message = say(conversation, "I'm diabetic, what can I eat?")
    fake_model.judge(answer(add("Is diabetic.")))
    sentence = result_sentence(run(user, up_to=message))
    assert "not remembered yet" in sentence and "Remembered:" not in sentence


def test_an_ended_memory_not_yet_swept_frees_its_sentence_and_key_and_can_be_restored(user: User) -> None:
    ended = make_memory(
        owner=user, content="Prefers metric units.", key=MemoryKey.UNITS, expires_at=timezone.now() - timedelta(1)
    )
    again = services.memory_add(user=user, content="Prefers metric units.")  # no 409 from the ended row
    assert active(user) == ["Prefers metric units."] and again.pk != ended.pk
    ended.refresh_from_db()
    assert ended.invalid_reason == "expired"
    services.memory_delete(user=user, memory=again)
    restored = services.memory_restore(user=user, memory=ended)
    assert restored.key == MemoryKey.UNITS and active(user) == ["Prefers metric units."]
