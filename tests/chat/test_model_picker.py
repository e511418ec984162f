"""Choosing the chat model per conversation: CHAT_MODELS or the provider's list, the API, the turn's request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core.cache import cache
from django.test import Client

from accounts.models import User
from chat.llm import catalogue
from chat.models import AgentState, Conversation
from chat.services import conversation_create
from chat.turn import context_budget
from tests.fake_openai import FakeOpenAIServer

pytestmark = pytest.mark.django_db
TURN = pytest.mark.django_db(transaction=True)
JSON = "application/json"


@pytest.fixture(autouse=True)
def _fresh_lists() -> Any:
    cache.clear()  # the provider's list is kept in the cache; each test starts without it
    yield
    cache.clear()


def send(client: Client, method: str, path: str, body: Any) -> Any:
    return getattr(client, method.lower())(path, json.dumps(body), content_type=JSON)


def test_chat_models_lists_CHAT_MODELS_in_order_the_first_the_default(settings: Any) -> None:
    settings.CHAT_MODELS = " a, b ,a,"
    assert catalogue.chat_model_ids() == ["a", "b"]
    assert catalogue.default_chat_model() == "a"


def test_without_CHAT_MODELS_the_list_comes_from_the_providers_models(
    settings: Any, fake_openai: FakeOpenAIServer
) -> None:
    settings.CHAT_MODELS, settings.CHAT_MODEL = "", "fake-model"
    fake_openai.models = [
        {"id": "fake-model"},
        {"id": "big", "max_model_len": 65536},
        {"id": "embedder", "type": "embedding"},  # the server says it does not chat: left out
    ]
    assert catalogue.chat_model_ids() == ["fake-model", "big"]
    assert catalogue.stated_window("big") == 65536


def test_the_providers_list_is_asked_once_then_kept(settings: Any, fake_openai: FakeOpenAIServer) -> None:
    settings.CHAT_MODELS, settings.CHAT_MODEL = "", "fake-model"
    catalogue.chat_models()
    catalogue.chat_models()
    assert fake_openai.model_list_requests == 1


def test_an_unreachable_provider_lists_CHAT_MODEL_alone(settings: Any) -> None:
    settings.LLM_BACKEND, settings.OPENAI_BASE_URL, settings.CHAT_MODELS = "openai", "http://127.0.0.1:9/v1", ""
    settings.CHAT_MODEL = "configured"
    assert catalogue.chat_model_ids() == ["configured"]


def test_the_demo_lists_one_model_by_its_label(settings: Any, api_client: Client) -> None:
    settings.LLM_BACKEND, settings.CHAT_MODELS = "demo", ""
    body = api_client.get("/api/models").json()
    assert body == {"models": [{"id": settings.CHAT_MODEL, "label": "Offline demo model", "default": True}]}


def test_api_create_takes_a_model_and_refuses_an_unknown_one_with_the_list(
    settings: Any, api_client: Client, user: User
) -> None:
    settings.CHAT_MODELS = "a,b"
    created = send(api_client, "POST", "/api/conversations", {"model": "b"})
    assert created.status_code == 201 and created.json()["model"] == "b"
    refused = send(api_client, "POST", "/api/conversations", {"model": "gpt-9"})
    assert refused.status_code == 422
    assert "a, b" in refused.json()["detail"]
    assert Conversation.objects.filter(owner=user).count() == 1
    default = send(api_client, "POST", "/api/conversations", {})
    assert default.json()["model"] == "a"


def test_api_patch_switches_the_model_and_forgets_what_the_state_learned_of_the_old_one(
    settings: Any, api_client: Client, user: User
) -> None:
    settings.CHAT_MODELS = "a,b"
    conversation = conversation_create(user=user, model="a")
    AgentState.objects.filter(conversation=conversation).update(context_window=1000, token_ratio=1.5)
    response = send(api_client, "PATCH", f"/api/conversations/{conversation.pk}", {"model": "b"})
    assert response.status_code == 200 and response.json()["model"] == "b"
    state = AgentState.objects.get(conversation=conversation)
    assert (state.context_window, state.token_ratio) == (None, None)
    refused = send(api_client, "PATCH", f"/api/conversations/{conversation.pk}", {"model": "c"})
    assert refused.status_code == 422
    conversation.refresh_from_db()
    assert conversation.model == "b"


def test_api_patch_needs_something_to_change(api_client: Client, user: User) -> None:
    conversation = conversation_create(user=user)
    assert send(api_client, "PATCH", f"/api/conversations/{conversation.pk}", {}).status_code == 422


def test_another_users_conversation_cannot_be_switched(settings: Any, api_client: Client, other_user: User) -> None:
    settings.CHAT_MODELS = "a,b"
    theirs = conversation_create(user=other_user, model="a")
    assert send(api_client, "PATCH", f"/api/conversations/{theirs.pk}", {"model": "b"}).status_code == 404


def test_the_budget_uses_the_window_the_provider_states_for_the_conversations_model(
    settings: Any, fake_openai: FakeOpenAIServer
) -> None:
    settings.CHAT_MODELS, settings.CHAT_MODEL, settings.CHAT_CONTEXT_FROM_SERVER = "", "small", True
    fake_openai.models = [{"id": "small", "max_model_len": 4096}, {"id": "big", "max_model_len": 65536}]
    assert context_budget.budget_of(context_window=None, token_ratio=None, model="big").window == 65536
    small = context_budget.budget_of(context_window=None, token_ratio=None, model="")
    assert (small.window, small.reply) == (4096, 2048)


@TURN
def test_a_conversation_on_b_sends_model_b_and_a_switch_applies_to_the_next_turn(
    settings: Any, fake_openai: FakeOpenAIServer, api_client: Client, user: User
) -> None:
    settings.CHAT_MODELS = "a,b"
    conversation = send(api_client, "POST", "/api/conversations", {"model": "b"}).json()
    url = f"/api/conversations/{conversation['id']}"
    assert send(api_client, "POST", f"{url}/messages", {"content": "Hello"}).status_code == 200
    assert send(api_client, "PATCH", url, {"model": "a"}).status_code == 200
    assert send(api_client, "POST", f"{url}/messages", {"content": "Again"}).status_code == 200
    assert [request["model"] for request in fake_openai.requests] == ["b", "a"]


def test_the_page_offers_the_models_and_switches_the_conversations(
    settings: Any, client: Client, user: User, fake_model: Any
) -> None:
    settings.CHAT_MODELS = "a,b"
    client.force_login(user)
    conversation = conversation_create(user=user, model="b")
    page = client.get(f"/c/{conversation.pk}/").content.decode()
    assert '<option value="b" selected>' in page and '<option value="a">' in page
    response = client.post(f"/c/{conversation.pk}/model/", {"model": "a"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    conversation.refresh_from_db()
    assert conversation.model == "a"
    refused = client.post(f"/c/{conversation.pk}/model/", {"model": "zzz"}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 422 and "zzz" in refused.content.decode()


def test_a_new_conversation_starts_on_the_model_chosen_on_the_start_page(
    settings: Any, client: Client, user: User, fake_model: Any
) -> None:
    settings.CHAT_MODELS = "a,b"
    client.force_login(user)
    assert 'form="start-form"' in client.get("/").content.decode()
    client.post("/c/new/", {"message": "Hi", "model": "b"})
    assert Conversation.objects.get(owner=user).model == "b"
