"""One request to the OpenAI-compatible endpoint (`POST /v1/chat/completions`), from the client's
messages to the saved reply (SPEC §9).

1. `prepare` (a worker thread): the request's new user messages are saved in the conversation its
   `X-Memora-Conversation` names (else the token's conversation of the day) and the last of them starts
   a turn like a chat's (`turn_start`: the same locks, throttles and quotas); the memory block is built
   for it by the chat's context providers, ranked as in any turn, and added after the client's own system
   messages; what it held is logged as read by the client. A temporary request (`X-Memora-Temporary: 1`)
   is only counted: nothing is saved, used or learned. History sent again saves nothing new.
2. `run`: the request goes to the configured provider through the provider queue (chat.model_queue),
   with the client's own tools, as a stream of text and tool calls.
3. `finish` (a worker thread): the reply is saved with the memories its block held and the turn's
   end is announced, so the user's messages are learned from as after any turn.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from channels.db import database_sync_to_async
from django.utils import timezone

from accounts.models import ApiToken, Scope, User
from chat import extensions, model_queue
from chat.extensions import TurnContext
from chat.limits import TurnOrigin
from chat.llm import LLMError, StreamChunk, TextDelta, ToolCall, ToolCalls, Usage, get_chat_model
from chat.models import Conversation, Message
from chat.rejections import ConversationBusy
from chat.turn.leases import Pulse, turns_heartbeat
from chat.turn.transactions import StartedTurn, turn_count_only, turn_finish, turn_start, user_messages_add
from connect import history
from connect.tokens import token_view
from memory import connected
from memory.context import Block, block_for_turn, blocks_in_flight, candidates
from memory.models import MemoryAccess

BUSY_WAIT_SECONDS = 20.0  # a request waits this long for the conversation's previous one to finish
HEARTBEAT_SECONDS = 5.0


@dataclass
class Prepared:
    messages: list[dict[str, Any]]
    turn: StartedTurn | None = None
    memory_ids: list[int] = field(default_factory=list)
    conversation_id: str = ""


@dataclass
class Reply:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None


def with_block(messages: list[dict[str, Any]], block: str | None) -> list[dict[str, Any]]:
    """The client's messages with Memora's block as a system message after the client's leading ones."""
    if not block:
        return messages
    at = 0
    while at < len(messages) and messages[at].get("role") in ("system", "developer"):
        at += 1
    return [*messages[:at], {"role": "system", "content": block}, *messages[at:]]


def _start(*, token: ApiToken, conversation: Any, contents: list[str], origin: TurnOrigin) -> StartedTurn:
    """Save the earlier new messages and start the turn with the last, waiting a while for a turn that
    already runs in the conversation (a client's previous request)."""
    deadline = time.monotonic() + BUSY_WAIT_SECONDS
    while True:
        try:
            turn = turn_start(user=token.user, conversation=conversation, content=contents[-1], origin=origin)
            break
        except ConversationBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.25)
    return turn


def prepare(
    *, token: ApiToken, messages: list[dict[str, Any]], key: str | None, temporary: bool, address: str, client: str
) -> Prepared:
    user, origin = token.user, TurnOrigin(address=address)
    if temporary:
        turn_count_only(user=user, origin=origin)
        return Prepared(messages=messages)
    conversation = history.conversation_for(
        user=user,
        key=history.conversation_key(token=token, header=key, today=timezone.localdate()),
        project_id=token.project_id,
    )
    digests = history.user_digests(messages)
    new = history.new_messages(conversation=conversation, digests=digests)
    reads = token.allows(Scope.MEMORY_READ)
    if not new:  # the same history again: nothing to save; the block is still built for its last message
        turn_count_only(user=user, origin=origin)
        block = _block_again(token, digests) if reads else None
        ids = block.ids if block else []
        _log(token, client, ids)
        return Prepared(with_block(messages, block.text() if block else None), None, ids, str(conversation.pk))
    earlier = user_messages_add(user=user, conversation=conversation, contents=[text for _, text in new[:-1]])
    turn = _start(token=token, conversation=conversation, contents=[text for _, text in new], origin=origin)
    history.remember(
        conversation=conversation, saved=[(d, m) for (d, _), m in zip(new, [*earlier, turn.user_message], strict=True)]
    )
    block_text, ids = _block_of_turn(turn, user=user, conversation=conversation) if reads else (None, [])
    _log(token, client, ids)
    return Prepared(with_block(messages, block_text), turn, ids, str(conversation.pk))


def _block_again(token: ApiToken, digests: list[tuple[str, str]]) -> Block | None:
    """The memory block for the last user message of a history already saved (nothing new to save)."""
    if not digests:
        return None
    view = token_view(token)
    ctx = connected.query_context(user=token.user, text=digests[-1][1], view=view)
    return block_for_turn(ctx, candidates(user_id=token.user.pk, view=view))


def _block_of_turn(turn: StartedTurn, *, user: User, conversation: Conversation) -> tuple[str | None, list[int]]:
    """The context providers' blocks for the turn just started, as chat would build them, and the ids of the
    memories they hold."""
    ctx = TurnContext(user, conversation, turn.user_message, turn.assistant_message)
    parts = [text for provider in extensions.context_providers() if (text := provider(ctx))]
    return "\n\n".join(parts) or None, blocks_in_flight.peek(turn.assistant_message.pk) or []


def _log(token: ApiToken, client: str, ids: list[int]) -> None:
    connected.reads_record(user=token.user, token=token, client=client, kind=MemoryAccess.Kind.V1, memory_ids=ids)


async def run(
    prepared: Prepared, *, tools: list[dict[str, Any]] | None, max_tokens: int | None, model: str, reply: Reply
) -> AsyncIterator[StreamChunk]:
    """The provider's stream (text deltas, then at most one ToolCalls), gathered into `reply` too."""
    request: dict[str, Any] = {
        "messages": prepared.messages,
        "tools": tools or None,
        "max_tokens": max_tokens,
        "model": model,
    }
    beat = time.monotonic()
    async for chunk in model_queue.stream(get_chat_model(), **request):
        if isinstance(chunk, model_queue.Waiting):
            continue
        if isinstance(chunk, TextDelta):
            reply.text += chunk.text
        elif isinstance(chunk, ToolCalls):
            reply.tool_calls.extend(chunk.calls)
        elif isinstance(chunk, Usage):
            reply.prompt_tokens = chunk.prompt_tokens
        if prepared.turn is not None and time.monotonic() - beat > HEARTBEAT_SECONDS:
            beat = time.monotonic()
            await _heartbeat(prepared.turn, reply.text)
        yield chunk


async def _heartbeat(turn: StartedTurn, text: str) -> None:
    """Keep the conversation's lease (a long reply outlives it) and save the text so far."""
    pulse = Pulse(turn.conversation.pk, turn.lock_token, turn.assistant_message.pk, text)
    await database_sync_to_async(turns_heartbeat)([pulse])


def finish(prepared: Prepared, reply: Reply, *, error: LLMError | None = None, interrupted: bool = False) -> None:
    """Save the reply (with the memories its block held) and announce the turn's end."""
    turn = prepared.turn
    if turn is None:
        return
    status = Message.Status.COMPLETE
    if error is not None:
        status = Message.Status.ERROR
    elif interrupted:
        status = Message.Status.INTERRUPTED
    items = [{"role": "assistant", "content": reply.text}] if reply.text else []
    turn_finish(turn=turn, status=status, content=reply.text, error=str(error or ""), new_items=items)
