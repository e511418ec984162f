"""Tidy-up: candidate clusters, the consolidation judge (scripted on the fake provider), Accept, Reject, Undo."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chat.models import Message, Project
from chat.projects import project_create
from memory import forgetting, services
from memory.consolidation import candidates, judging
from memory.consolidation import services as tidy
from memory.consolidation.demo import answer as demo_answer
from memory.models import ConsolidationProposal, Memory, MemorySource
from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.helpers import make_memory, make_message, make_user

pytestmark = pytest.mark.django_db

DUPLICATES = ["I like green tea", "I really like green tea", "Green tea is what I like"]


def three_duplicates(user: Any, conversation: Any) -> list[Memory]:
    rows = []
    for text in DUPLICATES:
        memory = make_memory(owner=user, content=text)
        message = make_message(conversation=conversation, role=Message.Role.USER, content=text)
        MemorySource.objects.create(memory=memory, message=message)
        rows.append(memory)
    return rows


def merge_answer(rows: list[Memory], content: str = "Likes green tea") -> FakeResponse:
    return FakeResponse(json.dumps({"proposals": [{"op": "merge", "ids": [m.pk for m in rows], "content": content}]}))


def test_three_duplicates_become_one_only_after_accept_with_all_three_sources(
    fake_openai: FakeOpenAIServer, user: Any, conversation: Any
) -> None:
    rows = three_duplicates(user, conversation)
    fake_openai.queue(merge_answer(rows))
    done = tidy.consolidation_pass(user_id=user.pk)
    assert (done.clusters, done.judge_calls, done.proposals, done.failed_clusters) == (1, 1, 1, 0)
    assert done.chars > sum(len(t) for t in DUPLICATES)
    assert fake_openai.requests[0]["messages"][0]["content"].startswith(judging.JUDGE_MARKER)
    # Nothing changes while the proposal waits.
    assert Memory.objects.filter(owner=user, invalid_at__isnull=True).count() == 3
    proposal = ConsolidationProposal.objects.get(owner=user)
    tidy.proposal_accept(user=user, proposal=proposal)
    active = Memory.objects.get(owner=user, invalid_at__isnull=True)
    assert active.content == "Likes green tea"
    assert active.merged_from == [m.pk for m in rows]
    assert active.source_links.count() == 3
    assert set(Memory.objects.filter(pk__in=[m.pk for m in rows]).values_list("invalid_reason", flat=True)) == {
        "merged"
    }


def test_undo_restores_the_three_and_removes_the_merged_memory(
    fake_openai: FakeOpenAIServer, user: Any, conversation: Any
) -> None:
    rows = three_duplicates(user, conversation)
    fake_openai.queue(merge_answer(rows))
    tidy.consolidation_pass(user_id=user.pk)
    proposal = tidy.proposal_accept(user=user, proposal=ConsolidationProposal.objects.get(owner=user))
    merged_id = proposal.result_id
    tidy.proposal_undo(user=user, proposal=proposal)
    assert sorted(Memory.objects.filter(owner=user, invalid_at__isnull=True).values_list("pk", flat=True)) == sorted(
        m.pk for m in rows
    )
    assert merged_id is not None and not Memory.objects.filter(pk=merged_id).exists()
    assert ConsolidationProposal.objects.get(pk=proposal.pk).status == "undone"


def test_a_rejected_proposal_never_comes_back(fake_openai: FakeOpenAIServer, user: Any, conversation: Any) -> None:
    rows = three_duplicates(user, conversation)
    fake_openai.queue(merge_answer(rows), merge_answer(rows, "Loves green tea"))
    tidy.consolidation_pass(user_id=user.pk)
    tidy.proposal_reject(user=user, proposal=ConsolidationProposal.objects.get(owner=user))
    again = tidy.consolidation_pass(user_id=user.pk)
    assert again.judge_calls == 1 and again.proposals == 0
    assert list(ConsolidationProposal.objects.filter(owner=user).values_list("status", flat=True)) == ["rejected"]
    assert Memory.objects.filter(owner=user, invalid_at__isnull=True).count() == 3


def test_a_malformed_answer_fails_its_cluster_not_the_pass(fake_openai: FakeOpenAIServer, user: Any) -> None:
    make_memory(owner=user, content="I like green tea")
    make_memory(owner=user, content="I really like green tea")
    make_memory(owner=user, content="My dog is called Rex")
    make_memory(owner=user, content="My dog is named Rex")
    fake_openai.queue(
        FakeResponse(json.dumps({"proposals": [{"op": "merge", "ids": [999999, 1], "content": "x"}]})),
        FakeResponse(json.dumps({"proposals": []})),
    )
    done = tidy.consolidation_pass(user_id=user.pk)
    assert (done.clusters, done.judge_calls, done.failed_clusters) == (2, 2, 1)
    assert not ConsolidationProposal.objects.filter(owner=user).exists()


def test_candidates_never_cross_users_or_scopes(user: Any) -> None:
    project = project_create(user=user, name="Client", memory_mode=Project.MemoryMode.ISOLATED)
    other = make_user()
    make_memory(owner=user, content="I like green tea")
    make_memory(owner=other, content="I like green tea")
    make_memory(owner=user, content="I like green tea", project=project)
    make_memory(owner=user, content="I really like green tea", project=project)
    clusters = candidates.user_clusters(user_id=user.pk)
    assert len(clusters) == 1 and clusters[0].project_id == project.pk
    assert {m.project_id for m in Memory.objects.filter(pk__in=clusters[0].ids)} == {project.pk}


def test_a_permanent_delete_leaves_no_copy_in_any_proposal(
    fake_openai: FakeOpenAIServer, user: Any, conversation: Any
) -> None:
    rows = three_duplicates(user, conversation)
    fake_openai.queue(merge_answer(rows))
    tidy.consolidation_pass(user_id=user.pk)
    proposal = tidy.proposal_accept(user=user, proposal=ConsolidationProposal.objects.get(owner=user))
    assert proposal.result_id is not None
    services.memory_delete(user=user, memory=Memory.objects.get(pk=proposal.result_id))
    assert ConsolidationProposal.objects.get(pk=proposal.pk).content == ""
    assert "tidy-up" in forgetting.redactors()


def test_the_demo_judge_merges_near_identical_memories_and_never_peanut_allergy_with_cookies() -> None:
    text = (
        "Memories:\n[1] (2026-01-01) I am allergic to peanuts\n[2] (2026-01-02) I like peanut butter cookies\n"
        "[3] (2026-01-03) I am allergic to peanuts.\n[4] (2026-01-04) Prefers metric units (key: units)\n"
        "[5] (2026-02-01) Prefers imperial units (key: units)"
    )
    proposals = json.loads(demo_answer(text))["proposals"]
    assert {"op": "merge", "ids": [1, 3], "content": "I am allergic to peanuts."} in proposals
    assert {"op": "supersede", "id": 4, "by": 5} in proposals
    assert not any(2 in p.get("ids", []) for p in proposals)


def test_the_api_lists_accepts_and_undoes_and_another_users_id_is_a_404(
    fake_openai: FakeOpenAIServer, user: Any, conversation: Any, client: Any
) -> None:
    rows = three_duplicates(user, conversation)
    fake_openai.queue(merge_answer(rows))
    tidy.consolidation_pass(user_id=user.pk)
    client.force_login(user)
    listed = client.get("/api/memories/proposals").json()
    assert [p["ids"] for p in listed] == [[m.pk for m in rows]]
    assert [b["content"] for b in listed[0]["before"]] == DUPLICATES
    assert all(len(b["sources"]) == 1 for b in listed[0]["before"])
    pid = listed[0]["id"]
    other = make_user()
    client.force_login(other)
    assert client.post(f"/api/memories/proposals/{pid}/accept").status_code == 404
    client.force_login(user)
    accepted = client.post(f"/api/memories/proposals/{pid}/accept")
    assert accepted.status_code == 200 and accepted.json()["status"] == "accepted"
    merged = client.get(f"/api/memories/{accepted.json()['result_id']}").json()
    assert merged["merged_from"] == [m.pk for m in rows] and len(merged["sources"]) == 3
    assert client.post(f"/api/memories/proposals/{pid}/accept").status_code == 409
    assert client.post(f"/api/memories/proposals/{pid}/undo").json()["status"] == "undone"
    assert client.get("/api/memories/proposals?status=bogus").status_code == 422


def test_consolidate_answers_202_with_the_estimate(user: Any, client: Any, settings: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    make_memory(owner=user, content="I like green tea")
    make_memory(owner=user, content="I really like green tea")
    client.force_login(user)
    response = client.post("/api/memories/consolidate")
    assert response.status_code == 202 and response.json()["clusters"] == 1


def test_the_background_pass_is_due_only_for_users_with_new_memories(user: Any, settings: Any) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from memory.consolidation.tasks import is_due, users_due
    from memory.models import ConsolidationPass

    settings.MEMORY_CONSOLIDATE_DAYS = 7
    now = timezone.now()
    memory = make_memory(owner=user, content="I like green tea")
    assert not is_due(user_id=user.pk, now=now)  # the first pass comes a period after the first memory
    Memory.objects.filter(pk=memory.pk).update(created_at=now - timedelta(days=8))
    assert users_due(now=now) == [user.pk]
    ConsolidationPass.objects.filter(pk=ConsolidationPass.objects.create(owner=user).pk).update(
        started_at=now - timedelta(days=8)
    )
    assert users_due(now=now) == []  # nothing new since the last pass
    make_memory(owner=user, content="My dog is called Rex")
    assert users_due(now=now) == [user.pk]
    settings.MEMORY_CONSOLIDATE_DAYS = 0
    assert users_due(now=now) == []


def test_the_page_shows_the_suggestion_and_accepts_it_and_another_users_id_is_a_404(
    fake_openai: FakeOpenAIServer, user: Any, conversation: Any, client: Any
) -> None:
    rows = three_duplicates(user, conversation)
    fake_openai.queue(merge_answer(rows))
    client.force_login(user)
    assert client.post("/settings/memory/tidy/").status_code == 302
    proposal = ConsolidationProposal.objects.get(owner=user)
    page = client.get("/settings/memory/").content.decode()
    assert "Likes green tea" in page and all(text in page for text in DUPLICATES)
    client.force_login(make_user())
    assert client.post(f"/settings/memory/tidy/{proposal.pk}/accept/").status_code == 404
    client.force_login(user)
    assert client.post(f"/settings/memory/tidy/{proposal.pk}/accept/").status_code == 302
    assert Memory.objects.get(owner=user, invalid_at__isnull=True).content == "Likes green tea"


def test_restoring_one_original_from_history_undoes_the_merge(
    fake_openai: FakeOpenAIServer, user: Any, conversation: Any
) -> None:
    rows = three_duplicates(user, conversation)
    fake_openai.queue(merge_answer(rows))
    tidy.consolidation_pass(user_id=user.pk)
    proposal = tidy.proposal_accept(user=user, proposal=ConsolidationProposal.objects.get(owner=user))
    restored = services.memory_restore(user=user, memory=Memory.objects.get(pk=rows[1].pk))
    assert restored.pk == rows[1].pk and restored.invalid_at is None
    assert Memory.objects.filter(owner=user, invalid_at__isnull=True).count() == 3
    assert ConsolidationProposal.objects.get(pk=proposal.pk).status == "undone"


def test_the_sweep_runs_a_pass_for_a_user_who_is_due(
    user: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from memory.models import ConsolidationPass
    from memory.tasks import sweep_extractions_task

    settings.CELERY_TASK_ALWAYS_EAGER, settings.LLM_BACKEND = True, "demo"
    rows = [make_memory(owner=user, content=text) for text in ("I like green tea", "Likes green tea")]
    Memory.objects.filter(pk__in=[m.pk for m in rows]).update(created_at=timezone.now() - timedelta(days=8))
    with django_capture_on_commit_callbacks(execute=True):
        sweep_extractions_task()
    assert ConsolidationPass.objects.filter(owner=user).count() == 1
    assert ConsolidationProposal.objects.get(owner=user).member_ids == [m.pk for m in rows]
    with django_capture_on_commit_callbacks(execute=True):
        sweep_extractions_task()  # nothing new since: no second pass
    assert ConsolidationPass.objects.filter(owner=user).count() == 1
