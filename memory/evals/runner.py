"""Running golden cases through the judge: the pipeline's own call and checks, and no database.

Each case is rendered with `judge.render_input` (what extraction shows the judge), answered by
`memory.extraction.judge.call.call_judge` (how extraction asks), and scored by `memory.evals.scoring` (which parses
and validates the answer as extraction does). Nothing is written anywhere.

Every call is bounded twice: the judge call's own `max_tokens` and wall-clock deadline (the adapter
ends the request), and, as a backstop, a wait here that gives up a few seconds later whatever the
client does. Either way a model that never stops fails its case; the next one is sent only once the
abandoned call has ended and the server is done with it (chat.model_queue.hold_after_abandon), so a
single-slot server is never asked two things at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from django.conf import settings

from chat.llm import ChatModel, LLMError, server_load
from chat.llm.tokens import estimate_request, estimate_text
from chat.model_queue import hold_after_abandon
from memory.evals.cases import Case
from memory.evals.scoring import CaseScore, score_answer
from memory.extraction.judge.call import call_judge

DEFAULT_DEADLINE_SECONDS = 120.0
# How much longer than the call's own deadline the backstop waits before giving up on it.
GRACE_SECONDS = 5.0
#: an abandoned call's thread is waited for at most this long before the next case
ABANDONED_JOIN_SECONDS = 600.0


@dataclass(frozen=True)
class Target:
    """The model under evaluation: a chat model instance (the project's adapter or the demo) and a name."""

    chat_model: ChatModel
    model: str
    deadline: float = DEFAULT_DEADLINE_SECONDS


def call_with_deadline(call: Callable[[], str], deadline: float) -> tuple[str | None, str]:
    """(answer, "") or (None, what went wrong). Gives up waiting after `deadline` seconds.

    The call runs in a daemon thread: a provider that keeps the connection open cannot keep the
    evaluation (or the process's exit) waiting, whatever the client's own timeouts do.
    """
    outcome: dict[str, object] = {}

    def work() -> None:
        try:
            outcome["answer"] = call()
        except LLMError as exc:
            outcome["error"] = f"{exc.kind}: {exc}"
        except Exception as exc:  # a broken client or adapter: report it as this case's failure
            outcome["error"] = f"{exc.__class__.__name__}: {exc}"

    thread = threading.Thread(target=work, name="eval-judge-call", daemon=True)
    thread.start()
    thread.join(deadline)
    if thread.is_alive():
        thread.join(ABANDONED_JOIN_SECONDS)  # no new request while this one may still be on its way
        return None, f"no answer within the {deadline:g} s deadline"
    if "error" in outcome:
        return None, str(outcome["error"])
    answer = outcome.get("answer")
    if not isinstance(answer, str):
        return None, f"the call returned {type(answer).__name__}, not text"
    return answer, ""


def validation_limits() -> dict[str, int]:
    """The limits extraction validates a judge answer with (memory.extraction passes the same settings)."""
    return {"max_operations": settings.MEMORY_MAX_OPS_PER_ANSWER, "max_active": settings.MEMORY_MAX_ACTIVE}


def run_case(case: Case, target: Target) -> CaseScore:
    messages = case.judge_input().messages
    started = time.monotonic()
    raw, error = call_with_deadline(
        lambda: call_judge(messages, chat_model=target.chat_model, model=target.model),
        target.deadline + GRACE_SECONDS,
    )
    ms = int((time.monotonic() - started) * 1000)
    if raw is None and ("deadline" in error or error.startswith("timeout")):
        seconds = server_load.hold_seconds(
            model=target.model,
            max_tokens=int(settings.MEMORY_JUDGE_MAX_TOKENS),
            elapsed=ms / 1000,
            time_limit=target.deadline,
        )
        hold_after_abandon(target.chat_model, ticket_id=None, lease=0, seconds=seconds, model_name=target.model)
    score = score_answer(case, raw, error=error, limits=validation_limits())
    score.ms = ms
    # Estimates (chat.llm.tokens, deliberately on the high side): the adapter does not report usage.
    score.prompt_tokens = estimate_request(messages)
    score.answer_tokens = estimate_text(raw or "")
    return score


def run_cases(cases: Iterable[Case], target: Target, *, repeat: int = 1) -> Iterator[CaseScore]:
    """Score every case `repeat` times, in order, yielding each result as soon as it is known."""
    for case in cases:
        for _ in range(repeat):
            yield run_case(case, target)
