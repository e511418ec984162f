"""Ranking a turn's memories (memory.recall.rank) and the term index it scores with: no database."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from memory.evals.recall_set import load, user_memories
from memory.recall import (
    MEANING_MARGIN,
    RECALL_MAX,
    Candidate,
    Meaning,
    TermIndex,
    _KeptIndexes,
    always_used,
    kept_indexes,
    memory_terms,
    query_weights,
    rank,
    term_index,
)

MEMORIES = [
    Candidate(1, "Is allergic to peanuts.", pinned=True),
    Candidate(2, "Answer me in Chinese.", key="reply_language"),
    Candidate(3, "Has a cat called Miso."),
    Candidate(4, "Bought a small phone last year."),
    Candidate(5, "Runs marathons in spring."),
    Candidate(6, "Wants a new phone with a good camera."),
    Candidate(7, "喜欢在周末去爬山。"),
    Candidate(8, "Lives in Lyon."),
]


def ids(candidates: list[Candidate]) -> list[int]:
    return [c.id for c in candidates]


def test_only_memories_sharing_a_word_pass_the_floor_newest_first_on_a_tie() -> None:
    assert ids(rank(MEMORIES, message="Which phone should I buy?")) == [6, 4]
    assert ids(rank(MEMORIES, message="Hello, how are you?")) == []  # a greeting carries nothing of the rest


def test_word_forms_and_chinese_without_spaces_match() -> None:
    assert ids(rank(MEMORIES, message="what about my cats")) == [3]
    assert ids(rank(MEMORIES, message="这个周末爬山怎么样")) == [7]


def test_a_dish_reaches_the_dietary_fact_it_bears_on_without_a_shared_word() -> None:
    diet = [
        Candidate(1, "不吃辣，吃了会胃疼。"),
        Candidate(2, "喜欢喝普洱茶，下午以后不喝咖啡。"),
        Candidate(3, "Is vegetarian."),
        Candidate(4, "Plays the cello."),
        Candidate(5, "周末喜欢去钓鱼。"),
    ]
    assert ids(rank(diet, message="推荐几道川菜")) == [1]
    assert ids(rank(diet, message="火锅点什么锅底？")) == [1]
    assert ids(rank(diet, message="Can you recommend a good steakhouse?")) == [3]
    assert ids(rank(diet, message="Any good pubs nearby?")) == []  # no memory about alcohol
    assert ids(rank(diet, message="你好")) == []


def test_always_used_memories_are_not_ranked_but_carried_pinned_first() -> None:
    assert 1 not in ids(rank(MEMORIES, message="peanuts in the sauce?"))
    assert ids(always_used(MEMORIES)) == [1, 2]


def test_the_last_exchange_counts_beside_the_new_message() -> None:
    assert ids(rank(MEMORIES, message="Which one do you recommend?", previous="Marathon shoes?")) == [5]


def _crowded(close: dict[int, float], others: Sequence[int], reference: int = 20) -> Meaning:
    """Similarities as a small model gives them, all between 0.75 and 0.80 (`close`: the ones given), the
    message being vector [1, 0]."""

    def at(similarity: float) -> list[float]:
        return [similarity, math.sqrt(1 - similarity**2)]

    vectors: dict[int, Sequence[float]] = {pk: at(0.75 + 0.0005 * (pk % 7)) for pk in others}
    vectors.update({pk: at(s) for pk, s in close.items()})
    return Meaning([1.0, 0.0], vectors, [at(0.75 + 0.0004 * (i % 9)) for i in range(reference)])


def test_a_memory_close_in_meaning_passes_relative_to_the_users_memories_and_adds_to_the_rank() -> None:
    meaning = _crowded({3: 0.80, 4: 0.79}, others=[1, 2, 5, 6, 7, 8])
    assert meaning.standing(3) > MEANING_MARGIN > meaning.standing(8)
    ranked = rank(MEMORIES, message="Which phone?", meaning=meaning)
    # 4 and 6 share "phone"; 4 is also close, so ahead of 6; 3 shares no word but stands out from the
    # crowd (0.80 where the rest sit near 0.75); 5, 7, 8 are neither.
    assert set(ids(ranked)) == {3, 4, 6} and ids(ranked).index(4) < ids(ranked).index(6)


def test_a_fixed_floor_would_pass_everything_calibration_passes_only_what_stands_out() -> None:
    everything_close = _crowded({}, others=[1, 2, 3, 4, 5, 6, 7, 8])  # all at 0.75: nothing stands out
    assert ids(rank(MEMORIES, message="Where should I travel?", meaning=everything_close)) == []


def test_a_greeting_carries_nothing_by_meaning_either() -> None:
    meaning = _crowded({3: 0.80}, others=[1, 2, 4, 5, 6, 7, 8])
    assert ids(rank(MEMORIES, message="Hello, how are you?", meaning=meaning)) == []
    assert ids(rank(MEMORIES, message="你好！", meaning=meaning)) == []


def test_a_topic_most_memories_share_makes_them_all_relevant_within_the_limit() -> None:
    phones = [Candidate(i, f"Phone fact number {i}: likes phones of kind {i}.") for i in range(1, 7)]
    other = [Candidate(i, f"Visited city {i} once.") for i in range(7, 11)]
    memories = phones[:3] + other + phones[3:]
    assert set(ids(rank(memories, message="Which phone should I buy?"))) == {1, 2, 3, 4, 5, 6}
    many = [Candidate(i, f"Phone fact {i}.") for i in range(1, 40)]
    assert len(rank(many, message="Which phone should I buy?")) == RECALL_MAX


def naive_scores(candidates: list[Candidate], message: str) -> list[float]:
    """The lexical score as the docs define it, term by term over every candidate."""
    weights = query_weights(message)
    term_sets = [memory_terms(c.content) for c in candidates]
    n = len(candidates)
    scores = []
    for found in term_sets:
        score = 0.0
        for term, weight in weights.items():
            df = sum(term in s for s in term_sets)
            if term in found:
                score += weight * (1 + math.log(n / df))
        scores.append(score)
    return scores


def test_the_term_index_scores_as_the_definition_does_on_the_golden_set() -> None:
    recall_set = load()
    memories, _ = user_memories(recall_set, 300)
    others = [m for m in memories if not m.always]
    index = TermIndex(others)
    for case in recall_set.cases[:12]:
        got = index.scores(query_weights(case.message))
        assert got == pytest.approx(naive_scores(others, case.message)), case.id


def test_a_users_index_is_kept_while_their_memories_stay_and_forgets_a_deleted_ones_terms() -> None:
    owner = 10_000_001
    first = [Candidate(1, "Has a cat called Miso."), Candidate(2, "Plays the cello.")]
    assert ids(rank(first, message="my cello", owner=owner)) == [2]
    kept = term_index(owner, first)
    assert term_index(owner, first) is kept  # the same memories: the same index, no terms computed again

    later = [first[0], Candidate(3, "Plays the violin.")]  # the cello memory deleted, a new one added
    assert ids(rank(later, message="my cello", owner=owner)) == []
    index = term_index(owner, later)
    cat = first[0].content
    assert index is not kept and index.terms[cat] is kept.terms[cat]  # the cat's terms reused, not found again
    assert first[1].content not in index.terms and "cello" not in index.postings  # the deleted one's are gone


def test_kept_indexes_stay_within_their_bound_on_memories_oldest_user_out_first() -> None:
    kept = _KeptIndexes(limit=4)
    three = TermIndex([Candidate(i, f"Fact {i}.") for i in range(3)])
    kept.put(1, three)
    kept.put(2, TermIndex([]))  # an empty index still counts as one
    kept.put(1, three)  # replaced, not counted twice; user 1 is now the most recent
    assert len(kept) == 2
    kept.put(3, TermIndex([Candidate(9, "Fact 9.")]))
    assert (kept.get(2), kept.get(1)) == (None, three)  # 3 + 1 + 1 > 4: the least recent (user 2) went
    kept.forget(1)
    assert kept.get(1) is None and len(kept) == 1


@pytest.mark.django_db
def test_a_permanent_delete_drops_the_users_term_index_in_this_process() -> None:
    from memory import services
    from tests.helpers import make_memory, make_user

    user = make_user()
    cello = make_memory(owner=user, content="Plays the cello.")
    candidates = [Candidate(cello.pk, cello.content)]
    term_index(user.pk, candidates)
    assert kept_indexes.get(user.pk) is not None

    services.memory_delete(user=user, memory=cello)

    assert kept_indexes.get(user.pk) is None
