"""The golden set is well formed, and the scorer judges crafted answers the way the pipeline would."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import pytest

from memory.evals.cases import CATEGORIES, Case, CaseError, Expectation, load_cases
from memory.evals.scoring import prompt_example, score_answer, summarise
from memory.extraction.judge import CONVERSATION_BREAK

CASES = load_cases()


def test_golden_set_has_enough_cases_in_both_languages_and_every_category() -> None:
    assert len(CASES) >= 80
    languages = Counter(c.lang for c in CASES)
    assert languages["en"] >= 0.4 * len(CASES) and languages["zh"] >= 0.4 * len(CASES)
    per_category = Counter(c.category for c in CASES)
    assert set(per_category) == set(CATEGORIES)
    assert min(per_category.values()) >= 4
    for category in CATEGORIES:
        assert {c.lang for c in CASES if c.category == category} & {"zh", "mixed"}, category
        assert {c.lang for c in CASES if c.category == category} & {"en", "mixed"}, category


def test_long_batch_cases_fill_a_whole_batch_across_conversations() -> None:
    batches = [c for c in CASES if c.category == "long_batch"]
    assert batches
    for case in batches:
        assert sum(len(conversation) for conversation in case.conversations) == 40
        assert 1 <= len(case.required) <= 2
        assert case.judge_input().messages[1]["content"].count(CONVERSATION_BREAK) == len(case.conversations) - 1


def test_case_renders_exactly_what_the_pipeline_shows_the_judge() -> None:
    case = next(c for c in CASES if c.id == "en-break-it")
    system, user = case.judge_input().messages
    assert system["content"].startswith("# Memory judge")
    assert user["content"].splitlines()[-3:] == [
        "1. I'm choosing between the Kindle Paperwhite and the Kobo Clara.",
        CONVERSATION_BREAK,
        "2. I really like it, it's so easy to read on.",
    ]


# --- crafted answers -----------------------------------------------------------------------------

SCREEN = Case(
    id="t-screen",
    category="change_of_mind",
    lang="en",
    memories={42: "Prefers small phones.", 43: "Wears glasses."},
    conversations=(("I prefer big screens now.", "Also, please forget that I wear glasses."),),
    expect=(
        Expectation("update", id=42, must=(("big", "large"),), must_not=("small",)),
        Expectation("retract", id=43),
    ),
)


def answer(*operations: Mapping[str, object]) -> str:
    return json.dumps({"operations": list(operations)})


UPDATE = {"op": "update", "id": 42, "content": "Prefers large-screen phones.", "sources": [1]}
RETRACT = {"op": "retract", "id": 43}


def test_perfect_answer_passes_with_full_precision_and_recall() -> None:
    score = score_answer(SCREEN, answer(UPDATE, RETRACT))
    assert score.passed and (score.hits, score.false_positives, score.misses) == (2, 0, 0)
    assert score.problems == []


def test_update_of_an_unknown_id_is_dropped_and_counts_as_a_miss() -> None:
    score = score_answer(SCREEN, answer({**UPDATE, "id": 7}, RETRACT))
    assert not score.passed and (score.hits, score.false_positives, score.misses) == (1, 0, 1)
    assert "dropped by validation" in " ".join(score.problems) and "unknown memory id 7" in " ".join(score.problems)


def test_update_of_the_wrong_memory_is_a_false_positive_and_a_miss() -> None:
    score = score_answer(SCREEN, answer({**UPDATE, "id": 43}, {"op": "retract", "id": 42}))
    assert not score.passed and (score.hits, score.false_positives, score.misses) == (0, 2, 2)


def test_extra_add_fails_the_case() -> None:
    extra = {"op": "add", "content": "Wants phone suggestions.", "sources": [1]}
    score = score_answer(SCREEN, answer(UPDATE, RETRACT, extra))
    assert not score.passed and (score.hits, score.false_positives, score.misses) == (2, 1, 0)
    assert any(p.startswith("unexpected:") and "Wants phone suggestions" in p for p in score.problems)


def test_missing_retract_fails_the_case() -> None:
    score = score_answer(SCREEN, answer(UPDATE))
    assert not score.passed and (score.hits, score.false_positives, score.misses) == (1, 0, 1)
    assert "missed: retract #43" in score.problems


def test_content_with_a_forbidden_term_does_not_count() -> None:
    score = score_answer(SCREEN, answer({**UPDATE, "content": "No longer prefers small phones."}, RETRACT))
    assert not score.passed and score.misses == 1 and score.false_positives == 1


def test_a_second_memory_instead_of_an_update_fails() -> None:
    add = {"op": "add", "content": "Prefers large-screen phones.", "sources": [1]}
    score = score_answer(SCREEN, answer(add, RETRACT))
    assert not score.passed and (score.false_positives, score.misses) == (1, 1)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("Sure! I will remember that you prefer big screens.", "not the requested JSON shape"),
        ("{}", 'not the requested JSON shape: the answer is not an object with an "operations" list'),
        ('{"source": [1]}', "not the requested JSON shape"),
        ('```json\n{"operations": []}\n```', "not the requested JSON shape"),
        ('{"operations": [{"op": "remember", "content": "Big screens"}]}', "unknown op"),
    ],
)
def test_answers_not_in_the_requested_shape_fail_with_the_raw_text(raw: str, problem: str) -> None:
    score = score_answer(SCREEN, raw)
    assert score.malformed and not score.passed
    assert score.raw == raw and score.misses == 2 and score.hits == 0
    assert problem in score.problems[0]


def test_an_echo_of_the_prompts_example_is_reported_as_such() -> None:
    example = prompt_example()
    assert [o["op"] for o in example["operations"]] == ["add", "add", "update", "retract", "clear"]
    score = score_answer(SCREEN, json.dumps(example))
    assert score.malformed and not score.passed
    assert score.problems == ["echoed the example answer from the prompt"]


def test_a_failed_call_fails_the_case_with_its_error() -> None:
    score = score_answer(SCREEN, None, error="timeout: The model provider timed out.")
    assert not score.passed and score.error and score.misses == 2 and not score.malformed


NOTHING = Case(
    id="t-nothing",
    category="other_people",
    lang="en",
    memories={5: "Lives in Lyon."},
    conversations=(("My friend's budget is 3000.",),),
    expect=(),
)


def test_nothing_expected_passes_on_an_empty_list_and_on_a_harmless_duplicate() -> None:
    assert score_answer(NOTHING, '{"operations": []}').passed
    # Validation drops an add of content already remembered: nothing would change.
    assert score_answer(NOTHING, answer({"op": "add", "content": "Lives in Lyon."})).passed
    stored = score_answer(NOTHING, answer({"op": "add", "content": "Friend's budget is 3000."}))
    assert not stored.passed and stored.false_positives == 1


def test_clear_followed_by_an_add_and_optional_operations() -> None:
    case = Case(
        id="t-clear",
        category="forget_all",
        lang="en",
        memories={1: "Lives in Lyon."},
        conversations=(("Forget everything about me.", "I'm left-handed and I write in Rust."),),
        expect=(
            Expectation("clear"),
            Expectation("add", must=(("left-handed", "left handed"),)),
            Expectation("add", must=(("rust",),), optional=True),
        ),
    )
    add = {"op": "add", "content": "Is left-handed.", "sources": [2]}
    rust = {"op": "add", "content": "Writes code in Rust.", "sources": [2]}
    assert score_answer(case, answer({"op": "clear"}, add)).passed
    assert score_answer(case, answer({"op": "clear"}, add, rust)).passed
    assert score_answer(case, answer({"op": "clear"}, rust, add)).hits == 2
    assert not score_answer(case, answer(add)).passed
    assert score_answer(case, answer({"op": "clear"}, {"op": "retract", "id": 1})).malformed


def test_summary_counts_precision_recall_and_exact_cases() -> None:
    scores = [
        score_answer(SCREEN, answer(UPDATE, RETRACT)),  # 2 hits
        score_answer(SCREEN, answer(UPDATE, {"op": "add", "content": "Extra."})),  # 1 hit, 1 fp, 1 miss
        score_answer(NOTHING, '{"operations": []}'),
        score_answer(NOTHING, "not json"),
    ]
    report = summarise(scores)
    overall = report.overall
    assert (overall.cases, overall.passed, overall.hits, overall.false_positives, overall.misses) == (4, 2, 3, 1, 1)
    assert overall.precision == 0.75 and overall.recall == 0.75 and overall.accuracy == 0.5
    assert overall.malformed == 1
    assert report.by_category["other_people"].precision is None
    assert [s.case_id for s in report.failures] == ["t-screen", "t-nothing"]


# --- the case file format --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("{}", "expected a list of cases"),
        ("- {id: a, category: nope, lang: en, conversations: [[hi]]}", "category must be one of"),
        ("- {id: a, category: secret, lang: fr, conversations: [[hi]]}", "lang must be one of"),
        ("- {id: a, category: secret, lang: en, conversations: []}", "conversations must be"),
        ("- {id: a, category: secret, lang: en, conversations: [[hi]], expect: [{op: add}]}", "needs `must`"),
        ("- {id: a, category: secret, lang: en, conversations: [[hi]], expect: [{op: retract}]}", "needs id"),
        ("- {id: a, category: secret, lang: en, conversations: [[hi]], expect: [{op: retract, id: 3}]}", "not have"),
        ("- {id: a, category: secret, lang: en, conversations: [[hi]], colour: red}", "unknown keys"),
        ("- {id: a, category: secret, lang: en, conversations: [[hi]]}\n" * 2, "used twice"),
        ("- [unclosed", "not valid YAML"),
    ],
)
def test_case_file_mistakes_are_reported(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CaseError, match=error):
        load_cases(path)
