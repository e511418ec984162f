"""With Redis down the token API stays up: throttle counters fail open for valid credentials (logged once),
a token client's turn completes (pushes fall back, a failed enqueue is logged and left to the sweep), and
what must never fail open (the conversation lock, run slots, the turn limits) lives in the database.

Each test runs its own redis-server (tests.processes.PrivateRedis) and stops it."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from accounts import throttle
from accounts.models import User
from chat import push, services
from chat.models import Message
from chat.services import conversation_create
from chat.turn import transactions
from tests.processes import PrivateRedis

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def stopped_redis(settings: Any) -> Iterator[PrivateRedis]:
    """The cache and the channel layer on a private redis-server, which is then stopped."""
    if shutil.which("redis-server") is None:
        pytest.skip("needs redis-server")
    redis = PrivateRedis()
    server = redis()
    settings.CACHES = {"default": {"BACKEND": "core.cache.SharedRedisCache", "LOCATION": redis.url}}
    settings.CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [redis.url]}}
    }
    server.terminate()
    server.wait()
    yield redis
    redis.close()
    push.layer_reset()  # later tests start with a working layer
    throttle._store_down = False


def bearer(token: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {token}")


def test_a_valid_token_is_served_while_redis_is_down(stopped_redis: PrivateRedis, api_token: str) -> None:
    response = bearer(api_token).get("/api/me")
    assert response.status_code == 200


def test_a_failed_token_answers_401_not_500_and_the_outage_is_logged_once(
    stopped_redis: PrivateRedis, user: User, caplog: Any
) -> None:
    caplog.set_level(logging.WARNING, logger="accounts.throttle")
    for attempt in range(3):
        response = bearer(f"mem_wrong{attempt}").get("/api/me")
        assert response.status_code == 401
    outage = [r for r in caplog.records if "unavailable" in r.getMessage()]
    assert len(outage) == 1


def test_sign_up_works_while_redis_is_down(stopped_redis: PrivateRedis, client: Client) -> None:
    response = client.post(
        "/accounts/signup/",
        {"username": "newcomer", "password1": "a-long-passphrase", "password2": "a-long-passphrase"},
    )
    assert response.status_code == 302
    assert User.objects.filter(username="newcomer").exists()


@pytest.mark.needs_memory
def test_a_token_clients_turn_completes_while_redis_is_down(
    stopped_redis: PrivateRedis,
    user: User,
    api_token: str,
    fake_model: Any,
    settings: Any,
    monkeypatch: Any,
    caplog: Any,
) -> None:
    from kombu.exceptions import OperationalError

    from memory import tasks

    def broker_down(*args: Any, **kwargs: Any) -> None:
        raise OperationalError("Error 111 connecting to 127.0.0.1. Connection refused.")

    settings.MEMORY_EXTRACT_MIN_TURNS = 1
    monkeypatch.setattr(tasks.extract_memories_task, "apply_async", broker_down)
    conversation = conversation_create(user=user)
    fake_model.reply("Still ", "here")
    response = bearer(api_token).post(
        f"/api/conversations/{conversation.pk}/messages",
        json.dumps({"content": "Is anyone there?"}),
        content_type="application/json",
    )

    assert response.status_code == 200, response.content
    assert response.json()["assistant_message"]["content"] == "Still here"
    assert response.json()["assistant_message"]["status"] == Message.Status.COMPLETE
    # The enqueue failed: logged, and the message waits (pending) for the worker's sweep.
    assert any("could not enqueue memory extraction" in r.getMessage() for r in caplog.records)
    assert Message.objects.get(pk=response.json()["user_message"]["id"]).memory_status == Message.MemoryStatus.PENDING


def test_locks_run_slots_and_turn_limits_do_not_fail_open_while_redis_is_down(
    stopped_redis: PrivateRedis, user: User, settings: Any
) -> None:
    settings.CHAT_USER_RUN_SLOTS = 1
    busy = conversation_create(user=user)
    transactions.turn_start(user=user, conversation=busy, content="First")
    with pytest.raises(services.ConversationBusy):
        transactions.turn_start(user=user, conversation=busy, content="Second")
    with pytest.raises(services.RunSlotsFull):
        transactions.turn_start(user=user, conversation=conversation_create(user=user), content="Third")
    settings.CHAT_USER_TURNS_PER_MINUTE = 1
    with pytest.raises(services.TooManyTurns):
        transactions.turn_start(user=user, conversation=conversation_create(user=user), content="Fourth")
