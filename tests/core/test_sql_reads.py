"""The reads and writes on every turn's way to its first token that are written in SQL (core.sql): the token
check, the conversation a turn starts in, and the claim's lock, run-slot count and turn count. They must give
and write exactly what the ORM does, on SQLite and on PostgreSQL (the PostgreSQL pass runs this file too)."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.db import models
from django.http import Http404
from django.utils import timezone

from accounts.models import ApiToken, User
from accounts.services import api_token_check, api_token_create
from chat.limits import turn_counted, turns_running_elsewhere
from chat.models import AgentState, Conversation, Project, TurnStart
from chat.selectors import conversation_for_turn
from chat.turn.transactions import _lock_take, _turn_state
from tests.helpers import make_conversation, make_user

pytestmark = pytest.mark.django_db


def _fields(obj: models.Model) -> dict[str, Any]:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def test_the_token_check_reads_the_token_and_its_user_as_the_orm_does(user: Any) -> None:
    later = timezone.now() + timedelta(days=3)
    row, plain = api_token_create(user=user, name="laptop", expires_at=later, scopes=["memory:read", "chat"])

    checked = api_token_check(token=plain, client="curl/8.5")

    assert checked is not None
    assert _fields(checked) == _fields(ApiToken.objects.get(pk=row.pk))
    assert _fields(checked.user) == _fields(User.objects.get(pk=user.pk))
    assert checked.scopes == ["memory:read", "chat"] and checked.expires_at == later
    assert checked.expires_at.tzinfo is not None and checked.user.date_joined.tzinfo is not None


def test_the_token_check_refuses_an_expired_token_a_revoked_one_and_an_inactive_users(user: Any) -> None:
    expired, expired_plain = api_token_create(user=user, expires_at=timezone.now() + timedelta(seconds=30))
    ApiToken.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    revoked, revoked_plain = api_token_create(user=user)
    revoked.delete()
    _live, live_plain = api_token_create(user=user)
    assert api_token_check(token=expired_plain) is None
    assert api_token_check(token=revoked_plain) is None
    assert api_token_check(token=live_plain) is not None
    User.objects.filter(pk=user.pk).update(is_active=False)
    assert api_token_check(token=live_plain) is None


def test_a_turns_conversation_is_read_as_the_orm_reads_it_and_only_for_its_owner(user: Any) -> None:
    conversation = make_conversation(owner=user, title="Trip", temporary=True, model="small")
    Conversation.objects.filter(pk=conversation.pk).update(
        lock_token=uuid.uuid4(), lock_expires_at=timezone.now(), stop_requested=True
    )

    read = conversation_for_turn(user=user, conversation_id=str(conversation.pk))

    assert _fields(read) == _fields(Conversation.objects.get(pk=conversation.pk))
    assert isinstance(read.pk, uuid.UUID) and isinstance(read.lock_token, uuid.UUID)
    assert read.temporary is True and read.stop_requested is True
    with pytest.raises(Http404):
        conversation_for_turn(user=make_user(), conversation_id=conversation.pk)
    with pytest.raises(Http404):
        conversation_for_turn(user=user, conversation_id=uuid.uuid4())


def test_the_lock_is_taken_only_when_free_and_titles_only_an_untitled_conversation(user: Any) -> None:
    now = timezone.now()
    untitled = make_conversation(owner=user, title="")
    titled = make_conversation(owner=user, title="Named by me")
    token = uuid.uuid4()

    assert _lock_take(conversation_id=untitled.pk, token=token, now=now, title="Plan a trip to Lisbon")
    assert _lock_take(conversation_id=titled.pk, token=uuid.uuid4(), now=now, title="Something else")
    assert not _lock_take(conversation_id=untitled.pk, token=uuid.uuid4(), now=now, title=None)  # held

    untitled.refresh_from_db()
    titled.refresh_from_db()
    assert untitled.lock_token == token and untitled.stop_requested is False
    assert untitled.title == "Plan a trip to Lisbon" and untitled.updated_at == now
    assert untitled.lock_expires_at is not None and untitled.lock_expires_at > now
    assert titled.title == "Named by me"
    later = untitled.lock_expires_at + timedelta(seconds=1)  # the lease ran out: free again
    assert _lock_take(conversation_id=untitled.pk, token=uuid.uuid4(), now=later, title=None)


def test_run_slots_count_the_users_other_live_locks_and_turn_starts_are_counted(user: Any) -> None:
    now = timezone.now()
    this, busy, stale = (make_conversation(owner=user) for _ in range(3))
    elsewhere = make_conversation(owner=make_user())
    for conversation, expires in ((this, 60), (busy, 60), (stale, -60), (elsewhere, 60)):
        Conversation.objects.filter(pk=conversation.pk).update(lock_expires_at=now + timedelta(seconds=expires))

    assert turns_running_elsewhere(user_id=user.pk, conversation_id=this.pk, now=now) == 1

    turn_counted(user_id=user.pk, address="203.0.113.7" + "0" * 80, now=now)
    start = TurnStart.objects.get(user=user)
    assert start.started_at == now and start.address == ("203.0.113.7" + "0" * 80)[:64]


def test_a_turns_state_and_project_are_read_as_the_orm_reads_them(user: Any) -> None:
    project = Project.objects.create(owner=user, name="Café", instructions="Réponds en français.")
    conversation = make_conversation(owner=user, project=project, title="Menu", model="small")
    context = [{"role": "user", "content": "不吃辣 — ok?"}, {"role": "assistant", "content": "好的"}]
    AgentState.objects.filter(conversation=conversation).update(context=context, version=4, token_ratio=1.25)
    stale = Conversation.objects.get(pk=conversation.pk)
    Conversation.objects.filter(pk=conversation.pk).update(model="large")  # chosen since the object was read

    state = _turn_state(stale, title=None, now=timezone.now())

    assert (state.context, state.version, state.token_ratio, state.context_window) == (context, 4, 1.25, None)
    assert stale.model == "large" and stale.project is not None
    assert (stale.project.pk, stale.project.name, stale.project.instructions, stale.project.memory_mode) == (
        project.pk, "Café", "Réponds en français.", project.memory_mode
    )  # fmt: skip
