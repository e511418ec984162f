"""Ranking a turn's memories (memory.recall.rank): pure functions, no database."""

from __future__ import annotations

from collections.abc import Sequence

from memory.recall import Candidate, always_used, rank

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


def test_always_used_memories_are_not_ranked_but_carried_pinned_first() -> None:
    assert 1 not in ids(rank(MEMORIES, message="peanuts in the sauce?"))
    assert ids(always_used(MEMORIES)) == [1, 2]


def test_the_last_exchange_counts_beside_the_new_message() -> None:
    assert ids(rank(MEMORIES, message="Which one do you recommend?", previous="Marathon shoes?")) == [5]


def test_a_memory_close_in_meaning_passes_with_no_shared_word_and_similarity_adds_to_the_rank() -> None:
    query = [1.0, 0.0]
    vectors: dict[int, Sequence[float]] = {3: [0.9, 0.436], 8: [0.0, 1.0], 4: [0.6, 0.8], 6: [0.0, 1.0]}
    ranked = rank(MEMORIES, message="Which phone?", query_vector=query, vectors=vectors, similarity_floor=0.5)
    # 4 and 6 share "phone" (idf 1 + ln 6/2 = 2.1), 4 is also similar (0.6: + 4 × 0.35); 3 shares no word
    # but is close (0.9: 4 × 0.65 = 2.6, above 6's word alone); 8 is neither.
    assert ids(ranked) == [4, 3, 6]
