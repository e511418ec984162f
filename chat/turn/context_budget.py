"""The context budget of a conversation (chat.turn.compaction): how much of the model's window a request may
take, and what the provider's counts and refusals teach about it.

The window is the conversation's model's (chat.llm.catalogue: `CHAT_CONTEXT_TOKENS`, or what the provider
states for it), or a smaller one a provider stated when refusing), of which
`CHAT_REPLY_TOKENS` (at most half) is kept for the reply; every request must fit in the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings

from chat.llm import LLMError, catalogue, server_facts, tokens, window_size
from chat.models import AgentState, Conversation


@dataclass(frozen=True)
class Budget:
    window: int  # the model's context window, in tokens
    reply: int  # room kept for the reply
    ratio: float | None = None  # the conversation's calibration factor (chat.llm.tokens)

    @property
    def input(self) -> int:
        """The most a request's prompt may take."""
        return self.window - self.reply

    @property
    def compact_at(self) -> int:
        """Above this, the state is compacted in the background after the turn."""
        return int(self.input * settings.CHAT_COMPACT_AT)

    def measure(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> int:
        """A request's calibrated estimate."""
        return tokens.scaled(tokens.estimate_request(messages, tools), self.ratio)


def budget_for(state: AgentState | None = None) -> Budget:
    if state is None:
        return budget_of(context_window=None, token_ratio=None)
    model = Conversation.objects.filter(pk=state.conversation_id).values_list("model", flat=True).first() or ""
    return budget_of(context_window=state.context_window, token_ratio=state.token_ratio, model=model)


def budget_of(*, context_window: int | None, token_ratio: float | None, model: str = "") -> Budget:
    """The budget of a conversation on `model` ("": the default chat model), for its state's learned window
    (None: CHAT_CONTEXT_TOKENS, or what the provider states for the model) and calibration (None: the
    model's, from the server's counts of non-streamed calls, if any)."""
    model = catalogue.conversation_model(model)
    window = window_size.context_tokens(model)
    if context_window:
        window = min(window, context_window)
    window = max(window, 256)
    ratio = token_ratio or server_facts.model_ratio(model)
    return Budget(window=window, reply=min(settings.CHAT_REPLY_TOKENS, window // 2), ratio=ratio)


def state_calibrate(*, conversation_id: Any, reported: int, estimated: int, previous: float | None) -> float | None:
    """Record the provider's prompt size for a request we estimated at `estimated`; the new factor."""
    ratio = tokens.calibrated_ratio(reported=reported, estimated=estimated, previous=previous)
    if ratio is not None and (previous is None or abs(ratio - previous) > 0.02):
        AgentState.objects.filter(conversation_id=conversation_id).update(token_ratio=ratio)
    return ratio


def state_window_learn(*, conversation_id: Any, window: int) -> None:
    """Remember a smaller context window the provider stated when refusing a request."""
    if window > 0:  # only ever smaller: budget_of takes the least of this and the model's
        AgentState.objects.filter(conversation_id=conversation_id).update(context_window=window)


def is_overflow(exc: LLMError, *, request_tokens: int, budget: Budget) -> bool:
    """A refusal for length, or an empty stream on a large input (llama.cpp's way of refusing one)."""
    if exc.kind == "context_length":
        return True
    return exc.kind == "empty" and request_tokens > budget.input // 2


def after_refusal(*, conversation_id: Any, exc: LLMError, budget: Budget, request_tokens: int) -> Budget:
    """What a refusal for length teaches: the window it states, else that our estimate ran low."""
    if exc.context_window and exc.context_window < budget.window:
        state_window_learn(conversation_id=conversation_id, window=exc.context_window)
        window = exc.context_window
        return Budget(window=window, reply=min(settings.CHAT_REPLY_TOKENS, window // 2), ratio=budget.ratio)
    # The provider counted more than we did: assume it counts at least a quarter more than this request.
    ratio = max(budget.ratio or 1.0, (budget.input / max(request_tokens, 1)) * (budget.ratio or 1.0)) * 1.25
    AgentState.objects.filter(conversation_id=conversation_id).update(token_ratio=round(ratio, 4))
    return Budget(window=budget.window, reply=budget.reply, ratio=ratio)


def state_tokens(state: AgentState) -> int:
    """The state's calibrated size estimate (what `GET /api/conversations/{id}` reports)."""
    return tokens.scaled(tokens.estimate_messages(state.context), state.token_ratio)
