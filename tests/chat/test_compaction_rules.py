"""Where the agent state may be cut, how summaries fold, what is dropped last: pure rules, no database."""

from __future__ import annotations

from typing import Any

from chat.llm import tokens
from chat.turn import context_budget, cut, summary
from chat.turn.context_budget import Budget
from chat.turn.cut import cut_points, drop_oldest, is_summary, split_at, summary_of
from chat.turn.summary import Compacted, compact


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(call_id: str) -> dict[str, Any]:
    part = {"id": call_id, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    return {"role": "assistant", "content": None, "tool_calls": [part]}


def result(call_id: str, text: str = "found") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def conversation(turns: int, words: int = 30) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for i in range(turns):
        items += [user(f"question {i} " + "word " * words), assistant(f"answer {i} " + "word " * words)]
    return items


def no_orphans(items: list[dict[str, Any]]) -> bool:
    """Every tool result follows its call, and every call has its result."""
    calls = {c["id"] for i in items for c in i.get("tool_calls") or []}
    results = {i["tool_call_id"] for i in items if i.get("role") == "tool"}
    return calls == results


def scripted_summary(text: str = "They chose the small phone.") -> Any:
    seen: list[dict[str, Any]] = []

    def summarize(*, previous: str | None, items: list[dict[str, Any]], budget: Budget, max_tokens: int) -> str:
        seen.append({"previous": previous, "items": items, "max_tokens": max_tokens})
        return text

    summarize.seen = seen  # type: ignore[attr-defined]
    return summarize


def test_cuts_never_fall_between_a_tool_call_and_its_result() -> None:
    items = [user("a"), call("c1"), result("c1"), assistant("b"), user("c"), assistant("d")]
    points = cut_points(items)
    assert 2 not in points  # items[:2] would end with an unanswered call
    for i in points:
        assert no_orphans(items[:i]) and no_orphans(items[i:])


def test_cuts_before_a_user_message_come_first() -> None:
    items = [user("a"), assistant("b"), user("c"), assistant("d")]
    assert cut_points(items)[:2] == [2, 4]


def test_parallel_tool_calls_stay_together() -> None:
    both = {**call("c1"), "tool_calls": [*call("c1")["tool_calls"], *call("c2")["tool_calls"]]}
    items = [user("a"), both, result("c1"), result("c2"), assistant("done")]
    for i in cut_points(items):
        assert no_orphans(items[:i]) and no_orphans(items[i:])


def test_split_keeps_the_most_recent_exchanges_within_the_budget() -> None:
    items = conversation(10)
    cut = split_at(items, keep_tokens=tokens.estimate_messages(items[-4:]))
    assert cut == len(items) - 4
    assert items[cut]["role"] == "user"


def test_split_replaces_everything_when_nothing_fits() -> None:
    items = conversation(3)
    assert split_at(items, keep_tokens=1) == len(items)


def test_a_huge_tool_turn_is_cut_after_its_results_not_inside() -> None:
    items = [user("old"), assistant("x"), user("look"), call("c1"), result("c1", "data " * 500), assistant("ok")]
    cut = split_at(items, keep_tokens=50)
    assert no_orphans(items[:cut]) and no_orphans(items[cut:])


def test_compaction_puts_one_marked_summary_first_then_the_recent_items_verbatim() -> None:
    items = conversation(20)
    summarize = scripted_summary()
    done = compact(items, budget=Budget(window=2000, reply=500), summarize_with=summarize)
    assert done is not None and done.summarized
    assert is_summary(done.context[0]) and summary_of(done.context) == "They chose the small phone."
    rest = done.context[1:]
    assert rest == items[len(items) - len(rest) :]
    assert rest[0]["role"] == "user"
    assert done.summarized_turns == sum(1 for i in items[: len(items) - len(rest)] if i["role"] == "user")


def test_an_earlier_summary_is_folded_into_the_next() -> None:
    budget = Budget(window=2000, reply=500)
    first = compact(conversation(20), budget=budget, summarize_with=scripted_summary("first"))
    assert first is not None
    summarize = scripted_summary("second")
    second = compact([*first.context, *conversation(20)], budget=budget, summarize_with=summarize)
    assert second is not None
    assert summarize.seen[0]["previous"] == "first"
    assert not any(is_summary(i) for i in summarize.seen[0]["items"])
    assert sum(1 for i in second.context if is_summary(i)) == 1 and summary_of(second.context) == "second"


def test_repeated_compaction_keeps_the_state_bounded() -> None:
    budget = Budget(window=3000, reply=500)
    state: list[dict[str, Any]] = []
    for _ in range(50):
        state += conversation(3)
        if tokens.estimate_messages(state) > budget.compact_at:
            done = compact(state, budget=budget, summarize_with=scripted_summary("so far " * 100))
            assert done is not None
            state = done.context
    assert tokens.estimate_messages(state) <= budget.compact_at + tokens.estimate_messages(conversation(3))


def test_nothing_to_compact_when_the_state_already_fits_what_is_kept() -> None:
    assert compact(conversation(1, words=2), budget=Budget(window=30000, reply=500)) is None


def test_dropping_the_oldest_items_keeps_the_summary_while_it_can() -> None:
    state = [cut.summary_item("short"), *conversation(10)]
    dropped = drop_oldest(state, target=tokens.estimate_messages(state[:1] + state[-2:]))
    assert dropped == [state[0], *state[-2:]]
    assert drop_oldest(state, target=1) == []


def test_dropping_never_leaves_a_tool_result_alone() -> None:
    items = [user("a"), call("c1"), result("c1", "x " * 200), assistant("b"), user("c"), assistant("d")]
    for target in range(1, tokens.estimate_messages(items), 7):
        assert no_orphans(drop_oldest(items, target))


def test_clipped_text_fits_and_says_so() -> None:
    clipped = cut.clip_text("word " * 1000, 50)
    assert tokens.estimate_text(clipped) <= 50 and clipped.endswith("[…]")
    assert cut.clip_text("short", 50) == "short"


def test_the_reply_room_is_at_most_half_a_small_window(settings: Any) -> None:
    settings.CHAT_CONTEXT_TOKENS, settings.CHAT_REPLY_TOKENS = 4000, 4000
    assert context_budget.budget_for().input == 2000
    settings.CHAT_CONTEXT_TOKENS = 32000
    assert context_budget.budget_for().input == 28000


def test_a_long_transcript_is_summarized_in_pieces_that_each_fit(fake_model: Any) -> None:
    budget = Budget(window=1200, reply=300)
    summary.summarize(previous="before", items=conversation(40), budget=budget, max_tokens=100)
    requests = fake_model.summary_requests
    assert len(requests) > 1
    for request in requests:
        assert tokens.estimate_request(request["messages"]) + request["max_tokens"] <= budget.window
    assert "before" in requests[0]["messages"][1]["content"]
    assert "The earlier talk, summarized." in requests[1]["messages"][1]["content"]


def test_the_summary_prompt_says_what_to_keep() -> None:
    prompt = summary.summary_prompt()
    for phrase in ("decided", "open questions", "constraints", "Never invent", "earlier summary"):
        assert phrase.lower() in prompt.lower()


def test_compacted_result_type_is_plain_data() -> None:
    assert Compacted([], summarized_turns=0, summarized=False).context == []
