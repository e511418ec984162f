"""The consolidation golden set, the demo judge's score on it, and a pass's cost over 300 memories."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memory.consolidation import services as tidy
from memory.consolidation.candidates import CLUSTER_MAX, user_clusters
from memory.evals.consolidation_set import demo_answer, load, score
from memory.models import ConsolidationProposal
from tests.fake_openai import FakeOpenAIServer, FakeResponse
from tests.helpers import make_memory


def test_the_golden_set_has_thirty_clusters_in_both_languages_and_the_peanut_trap() -> None:
    cases = load()
    assert len(cases) >= 30
    assert {c.lang for c in cases} == {"en", "zh"}
    assert {"duplicate", "looks_alike", "changed_mind", "stale"} <= {c.kind for c in cases}
    peanuts = next(c for c in cases if c.id == "en-peanuts")
    assert [i.content for i in peanuts.cluster.items] == ["Is allergic to peanuts", "Likes peanut butter cookies"]
    assert not peanuts.merge


def test_the_demo_judge_never_merges_what_differs_and_finds_most_duplicates() -> None:
    result = score(load(), demo_answer)
    assert result.false_merges == 0 and result.precision == 1.0
    assert result.recall >= 0.8, result.as_dict()  # other wording is a language model's job
    assert not result.failed


@pytest.mark.django_db
def test_a_pass_over_300_memories_makes_one_judge_call_per_cluster_and_reports_its_cost(
    fake_openai: FakeOpenAIServer, user: Any
) -> None:
    colours = ["red", "blue", "green", "black", "white", "grey"]
    for n in range(300):
        make_memory(owner=user, content=f"Owns a {colours[n % 6]} bike number {n}")
    fake_openai.responder = lambda body: FakeResponse(json.dumps({"proposals": []}))
    clusters = user_clusters(user_id=user.pk)
    assert clusters and all(len(c.items) <= CLUSTER_MAX for c in clusters)
    done = tidy.consolidation_pass(user_id=user.pk)
    assert done.judge_calls == done.clusters == len(clusters) == len(fake_openai.requests)
    assert done.chars >= sum(len(m["content"]) for r in fake_openai.requests for m in r["messages"])
    assert not ConsolidationProposal.objects.filter(owner=user).exists()


@pytest.mark.django_db
def test_the_demo_pass_on_the_readme_data_proposes_the_merge(user: Any, settings: Any) -> None:
    settings.LLM_BACKEND = "demo"
    first = make_memory(owner=user, content="Prefers large-screen phones")
    tea = [make_memory(owner=user, content="I like green tea"), make_memory(owner=user, content="Likes green tea")]
    done = tidy.consolidation_pass(user_id=user.pk)
    assert done.proposals == 1
    proposal = ConsolidationProposal.objects.get(owner=user)
    assert (proposal.op, proposal.member_ids, proposal.content) == ("merge", [m.pk for m in tea], "I like green tea")
    assert first.pk not in proposal.member_ids
