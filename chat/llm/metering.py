"""What each provider call consumed, for the usage records (the `usage` app, SPEC §9 "Usage").

The adapters `note` every finished non-streamed call (judge, summary, embeddings): the provider's reported
`usage`, or the calibrated estimate marked `estimated` when it sent none. A caller that knows whom the call
was for collects them with `counting()` and hands them to `report`, which sends `provider_used`; the usage
app records them. Chat never depends on the usage app, and nothing here runs before a first token.

    with metering.counting() as calls:
        text = model.complete_text(...)
    metering.report(user_id=..., project_id=..., kind="summary", calls=calls)
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.dispatch import Signal

from chat.llm import server_facts, tokens

logger = logging.getLogger(__name__)

KINDS = ("chat", "memory_block", "judge", "summary", "embedding", "consolidation", "api")

# Sent with: user_id, project_id (None: no project), kind, calls (list[Call]). Receivers must not raise.
provider_used = Signal()
# Sent with: assistant_message_id, memory_tokens (the memory block's share of the reply's prompts).
reply_metered = Signal()


@dataclass(frozen=True)
class Call:
    model: str
    prompt_tokens: int
    completion_tokens: int
    estimated: bool  # True: our calibrated estimate (chat.llm.tokens), not the provider's count


_calls: ContextVar[list[Call] | None] = ContextVar("provider_calls", default=None)


@contextmanager
def counting(calls: list[Call] | None = None) -> Iterator[list[Call]]:
    """Collect the calls noted inside the block into `calls` (a new list by default): a caller that builds
    in several steps collects into one list. Threads started by asgiref or `asyncio.to_thread` share it."""
    calls = [] if calls is None else calls
    token = _calls.set(calls)
    try:
        yield calls
    finally:
        _calls.reset(token)


def note_made(calls: list[Call]) -> None:
    """Count calls another thread made for the caller (collected there with `counting()`) as made here."""
    current = _calls.get()
    if current is not None:
        current.extend(calls)


def note(*, model: str, prompt_tokens: int | None, completion_tokens: int | None, estimate: Any = None) -> None:
    """Note one finished call. A count the provider did not send is taken from `estimate()` -> (prompt,
    completion), called only then, and the call is marked estimated."""
    calls = _calls.get()
    if calls is None:
        return
    estimated = prompt_tokens is None or completion_tokens is None
    if estimated and estimate is not None:
        guessed_prompt, guessed_completion = estimate()
        prompt_tokens = guessed_prompt if prompt_tokens is None else prompt_tokens
        completion_tokens = guessed_completion if completion_tokens is None else completion_tokens
    calls.append(
        Call(
            model=model,
            prompt_tokens=int(prompt_tokens or 0),
            completion_tokens=int(completion_tokens or 0),
            estimated=estimated,
        )
    )


def estimate_call(*, model: str, messages: list[dict[str, Any]], answer: str) -> tuple[int, int]:
    """The calibrated estimate (chat.llm.tokens, scaled by the model's learned ratio) of a call's counts."""
    ratio = server_facts.model_ratio(model)
    return tokens.scaled(tokens.estimate_request(messages), ratio), tokens.scaled(tokens.estimate_text(answer), ratio)


def report(*, user_id: int, project_id: int | None, kind: str, calls: list[Call]) -> None:
    """Hand `calls` to the usage records. Never raises: counting must not cost anyone a reply or a memory."""
    if not calls:
        return
    try:
        provider_used.send(sender=None, user_id=user_id, project_id=project_id, kind=kind, calls=list(calls))
    except Exception:
        logger.exception("recording usage failed")


def reply_report(*, assistant_message_id: int, memory_tokens: int) -> None:
    """The memory block's share of one reply's prompts, for "memory: N tokens" under it. Never raises."""
    try:
        reply_metered.send(sender=None, assistant_message_id=assistant_message_id, memory_tokens=memory_tokens)
    except Exception:
        logger.exception("recording a reply's memory tokens failed")
