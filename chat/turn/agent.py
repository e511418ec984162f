"""One chat turn (SPEC §3): build the model input, stream the reply, run tools, finish.

    turn = await Turn.begin(user=..., conversation=..., content=...)   # may raise TurnRejected
    turn = await Turn.begin_retry(user=..., conversation=...)          # the failed latest reply, again
    async for event in turn.events(): ...                                # "start", "delta", "tool", "done" | "error"

Run by chat/turn/runner.py, detached from any connection, for the JSON API (SSE too) and WebSockets.

However a turn ends it is saved exactly once and the conversation is unlocked: "complete"; "error" with
the partial text (provider failure, or the reply past CHAT_REPLY_MAX_CHARS: chat.turn.reply_text);
"interrupted" with the partial text when the task iterating `events()` is cancelled or the generator is
closed (Stop, or the server shutting down). The saved context stays valid: every tool call has a result.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, TypeVar
from uuid import UUID

from channels.db import database_sync_to_async
from django.conf import settings
from django.utils.translation import gettext as _

from accounts.models import User
from chat import extensions, model_queue, selectors, services
from chat.extensions import TurnContext
from chat.llm import ChatModel, LLMError, TextDelta, ToolCall, ToolCalls, Usage, catalogue, get_chat_model, tokens
from chat.models import Conversation, Message
from chat.turn import compaction, context_budget, tool_calls, transactions
from chat.turn.clock import TurnBudget
from chat.turn.events import TurnEvent
from chat.turn.metered import StepMeter, TurnMeter
from chat.turn.model_input import CUT_SHORT, build_model_input
from chat.turn.reply_text import ReplyText

logger = logging.getLogger(__name__)
T = TypeVar("T")


def _begin(
    *,
    user: User,
    conversation: Conversation | UUID,
    content: str,
    retry: bool = False,
    message_id: int | None = None,
    origin: services.TurnOrigin | None = None,
    regenerate: bool = False,
    replace: int | None = None,
) -> tuple[transactions.StartedTurn, list[dict[str, Any]] | None, TurnMeter, context_budget.Budget]:
    """Start the turn (or, with `retry`, the retry) and build its first model input, in one trip
    to the database thread: each trip is a thread hop the first token waits for. Given an id, the
    conversation is looked up here too (Http404 unless it is the user's). The input is None when
    it could not be built here; the turn builds it again, where a failure is saved as its error. Then the
    turn's meter (chat.turn.metered), which measured that input, and its context budget: here, off the event
    loop, as the model's window may be asked of the provider (chat.llm.window_size) or the cache."""
    if not isinstance(conversation, Conversation):
        conversation = selectors.conversation_for_turn(user=user, conversation_id=conversation)
    if retry:
        started = transactions.turn_retry_start(
            user=user, conversation=conversation, message_id=message_id, origin=origin, regenerate=regenerate
        )
    else:
        started = transactions.turn_start(
            user=user, conversation=conversation, content=content, origin=origin, replace=replace
        )
    meter = TurnMeter(model=catalogue.conversation_model(started.conversation.model))
    budget = context_budget.budget_of(
        context_window=started.context_window, token_ratio=started.token_ratio, model=started.conversation.model
    )
    try:
        ctx = TurnContext(
            user=started.user,
            conversation=started.conversation,
            user_message=started.user_message,
            assistant_message=started.assistant_message,
            block_tokens=meter.block_tokens,
        )
        return started, meter.build(ctx, started.context), meter, budget
    except Exception:  # the turn is started and must run (and be saved) whatever happens here
        logger.exception("could not build the model input with the turn's start")
        return started, None, meter, budget


# The turn's database work runs in the loop's thread pool, not on the one thread Channels otherwise
# shares between every connection of the process: each call is its own short transaction, and turns
# starting together must not queue behind each other (or behind a tool, which may block for long).
_begin_async = database_sync_to_async(_begin, thread_sensitive=False)
_turn_finish = database_sync_to_async(transactions.turn_finish, thread_sensitive=False)
_model_input = database_sync_to_async(lambda meter, ctx, context: meter.build(ctx, context), thread_sensitive=False)
# Summarizing waits for the model: off the shared ORM thread too.
_fit_turn_async = database_sync_to_async(compaction.fit_turn, thread_sensitive=False)


@dataclass
class Turn:
    started: transactions.StartedTurn
    model: ChatModel
    _budget: context_budget.Budget  # the context budget (chat.turn.context_budget), as the turn learns it
    _text: list[str] = field(default_factory=list)
    _items: list[dict[str, Any]] = field(default_factory=list)
    _step_text: list[str] = field(default_factory=list)
    _reply: ReplyText = field(default_factory=ReplyText)  # storable pieces, within CHAT_REPLY_MAX_CHARS
    _finished: Message | None = None
    # Whether a length refusal was retried; whether the turn failed for length (then it leaves the state
    # as it found it, or smaller).
    _refused: bool = False
    _answered: bool = False  # whether the current request has sent any of the reply
    _too_long: bool = False
    _first_input: list[dict[str, Any]] | None = None  # built with the turn's start (`_begin`)
    _saving: bool = False
    _meter: TurnMeter = field(default_factory=lambda: TurnMeter(model=""))  # what it consumed (chat.turn.metered)
    # Set when this turn applied a summary: where the page's "earlier messages were summarized" goes now.
    summary_divider: selectors.SummaryDivider | None = None

    @classmethod
    async def begin(
        cls,
        *,
        user: User,
        conversation: Conversation | UUID,
        content: str,
        origin: services.TurnOrigin | None = None,
        replace: int | None = None,
    ) -> Turn:
        """Validate, lock and save the user message (with `replace`, in place of that latest message of the
        user's: chat.edits). Raises services.TurnRejected, writing nothing."""
        model = get_chat_model()  # first: a misconfigured provider must fail before anything is locked
        extensions.turn_prefetch(user.pk, content)  # runs beside the turn's start, which waits for it later
        started, *built = await _begin_async(
            user=user, conversation=conversation, content=content, origin=origin, replace=replace
        )
        return cls._started(started, model, *built)

    @classmethod
    async def begin_retry(
        cls,
        *,
        user: User,
        conversation: Conversation | UUID,
        message_id: int | None = None,
        origin: services.TurnOrigin | None = None,
        regenerate: bool = False,
    ) -> Turn:
        """Lock and reopen the failed latest reply (with `regenerate`, the latest reply whatever its status,
        its version kept: chat.versions), to write it again for the same user message.
        Raises services.TurnRejected (NothingToRetry when there is no such reply), writing nothing."""
        model = get_chat_model()
        started, *built = await _begin_async(
            user=user,
            conversation=conversation,
            content="",
            retry=True,
            message_id=message_id,
            origin=origin,
            regenerate=regenerate,
        )
        return cls._started(started, model, *built)

    @classmethod
    def _started(
        cls,
        started: transactions.StartedTurn,
        model: ChatModel,
        messages: list[dict[str, Any]] | None,
        meter: TurnMeter,
        budget: context_budget.Budget,
    ) -> Turn:
        return cls(started=started, model=model, _budget=budget, _first_input=messages, _meter=meter)

    @property
    def saved(self) -> bool:
        """Whether the turn is saving or has saved its reply (however it ended), releasing the conversation."""
        return self._saving

    @property
    def text(self) -> str:
        """The reply text streamed so far (the runner saves it about once a second)."""
        return "".join(self._text)

    @property
    def ctx(self) -> TurnContext:
        s = self.started
        return TurnContext(
            user=s.user,
            conversation=s.conversation,
            user_message=s.user_message,
            assistant_message=s.assistant_message,
            block_tokens=self._meter.block_tokens,
        )

    async def events(self) -> AsyncGenerator[TurnEvent, None]:
        s = self.started
        try:
            yield TurnEvent("start", user_message=s.user_message, assistant_message=s.assistant_message)
            messages = self._first_input
            if messages is None:
                messages = await _model_input(self._meter, self.ctx, s.context)
            # aclosing, here and around the model stream: a stopped turn closes the provider's stream at
            # once instead of leaving it to the garbage collector.
            async with aclosing(self._steps(messages)) as steps:
                async for event in steps:
                    yield event
        except LLMError as exc:
            message = await self._finish(Message.Status.ERROR, str(exc))
            yield TurnEvent(
                "error", text=str(exc), user_message=s.user_message, assistant_message=message, kind=exc.kind
            )
            return
        except (asyncio.CancelledError, GeneratorExit):
            # Stopped by the user or a dropped connection: keep what arrived, then stop.
            await asyncio.shield(self._finish(Message.Status.INTERRUPTED, _("Stopped before the reply was complete.")))
            raise
        except Exception:
            logger.exception("chat turn failed")
            message = await self._finish(Message.Status.ERROR, _("Something went wrong while writing the reply."))
            yield TurnEvent("error", text=message.error, user_message=s.user_message, assistant_message=message)
            return
        message = await self._finish(Message.Status.COMPLETE, "")
        yield TurnEvent("done", user_message=s.user_message, assistant_message=message)

    async def _steps(self, messages: list[dict[str, Any]]) -> AsyncGenerator[TurnEvent, None]:
        max_steps = settings.CHAT_MAX_TOOL_STEPS
        budget = TurnBudget.start()
        try:
            for step in range(max_steps + 1):
                # The last step offers no tools, so the loop always ends with an answer.
                last = step == max_steps
                calls: list[ToolCall] = []
                async for event in self._step(messages, self._tools_offered(last), budget, calls):
                    yield event
                step_text = "".join(self._step_text).strip() or None
                self._step_text = []
                if last:
                    calls = []  # no tools were offered: a stray call is not run, the text is the answer
                if not calls:
                    if not step_text:
                        raise LLMError(_("The model sent an empty reply."), kind="empty")
                    self._items.append({"role": "assistant", "content": step_text})
                    return
                async for event in self._run_tools(calls, step_text):
                    yield event
                # A tool may have changed what the providers show (flush_memory updates memories):
                # the next step sees the blocks as they are now, not as they were before the tool ran.
                messages = await _model_input(self._meter, self.ctx, self.started.context)
        finally:
            budget.close()

    def _tools_offered(self, last: bool) -> list[dict[str, Any]]:
        """Sized as sent: no schemas when the adapter would leave them out (chat.llm.tools_usable)."""
        offered = not last and settings.CHAT_TOOLS != "off" and self.model.tools_supported
        return extensions.tool_schemas(self.ctx) if offered else []

    async def _step(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], budget: TurnBudget, calls: list[ToolCall]
    ) -> AsyncGenerator[TurnEvent, None]:
        """One model step: its text as "delta" events, the tool calls it asks for into `calls`."""
        self._step_text = []
        stream = self._fitted_stream(messages, tools or None)
        async with aclosing(stream):
            while (chunk := await budget.next_chunk(stream)) is not None:
                if isinstance(chunk, TurnEvent):  # summarizing earlier messages first
                    yield chunk
                elif isinstance(chunk, ToolCalls):
                    calls[:] = chunk.calls
                elif chunk.text and (text := self._reply.piece(chunk.text)):
                    text = "\n\n" + text if self._text and not self._step_text else text
                    self._step_text.append(text)  # separated above from text written before a tool call
                    self._text.append(text)
                    yield TurnEvent("delta", text=text)
                if self._reply.full:  # CHAT_REPLY_MAX_CHARS: the reply ends here, with a note
                    raise self._reply.too_long()

    async def _run_tools(self, calls: list[ToolCall], step_text: str | None) -> AsyncGenerator[TurnEvent, None]:
        parts = [c.as_message_part() for c in calls]
        self._items.append({"role": "assistant", "content": step_text, "tool_calls": parts})
        for call in calls:
            yield TurnEvent("tool", tool=call.name)
            result = await tool_calls.run_tool_async(self.ctx, call)
            self._items.append({"role": "tool", "tool_call_id": call.id, "content": result})

    async def _fitted_stream(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> AsyncGenerator[TextDelta | ToolCalls | TurnEvent, None]:
        """The model's stream for one step, within the context budget: a request that would not fit is
        preceded by a compaction of the state (announced by a "tool" event), and a refusal for length
        compacts harder and retries once. Provider-reported prompt sizes calibrate the estimate."""
        s = self.started
        request = [*messages, *self._items]
        size = self._budget.measure(request, tools)
        if size > self._budget.input:
            yield TurnEvent("tool", tool=compaction.SUMMARIZING)
            request, size = await self._fit(tools, hard=False)
        while True:
            self._answered = False
            step = self._meter.step(request, tools, self._budget.ratio)  # counted however the step ends
            try:
                async for chunk in self._model_stream(request, tools, step):
                    yield chunk
                return
            except LLMError as exc:
                overflow = context_budget.is_overflow(exc, request_tokens=size, budget=self._budget)
                if not overflow or self._answered or self._refused:
                    self._too_long = self._too_long or (overflow and not self._answered)
                    raise
                refusal = exc
            finally:
                step.end()
            self._refused = True
            self._budget = await database_sync_to_async(context_budget.after_refusal)(
                conversation_id=s.conversation.pk, exc=refusal, budget=self._budget, request_tokens=size
            )
            yield TurnEvent("tool", tool=compaction.SUMMARIZING)
            request, size = await self._fit(tools, hard=True)

    async def _model_stream(
        self, request: list[dict[str, Any]], tools: list[dict[str, Any]] | None, step: StepMeter
    ) -> AsyncGenerator[TextDelta | ToolCalls | TurnEvent, None]:
        """One request, in the provider's queue first (LLM_MAX_CONCURRENCY: the page says how many are
        ahead). max_tokens: the reply's room in this conversation's budget (a learned window may be
        smaller). The conversation's model, as read with the turn's start: a switch takes effect next turn."""
        stream = model_queue.stream(
            self.model,
            messages=request,
            tools=tools,
            max_tokens=self._budget.reply,
            model=catalogue.conversation_model(self.started.conversation.model),
        )
        async with aclosing(stream):  # type: ignore[type-var]
            async for chunk in stream:
                if isinstance(chunk, model_queue.Waiting):
                    yield TurnEvent("waiting", text=str(chunk.ahead))
                    continue
                step.saw(chunk)
                if isinstance(chunk, Usage):
                    await self._calibrate(chunk.prompt_tokens, tokens.estimate_request(request, tools))
                    continue
                self._answered = True  # a refusal after this cannot be retried
                yield chunk

    async def _fit(self, tools: list[dict[str, Any]] | None, *, hard: bool) -> tuple[list[dict[str, Any]], int]:
        """Compact the state so this step's request fits; the new request and its estimate."""
        s, budget = self.started, self._budget
        bare = await database_sync_to_async(build_model_input)(self.ctx, [])
        try:
            fit = await _fit_turn_async(
                conversation_id=s.conversation.pk,
                lock_token=s.lock_token,
                context=s.context,
                version=s.state_version,
                measure_without_state=budget.measure([*bare, *self._items], tools),
                budget=budget,
                hard=hard,
            )
        except compaction.InputTooLong:
            self._too_long = True
            raise
        s.context, s.state_version = fit.context, fit.version
        # Where the page's divider goes now (the runner sends it before the reply's next piece).
        self.summary_divider = await database_sync_to_async(selectors.summary_divider)(conversation=s.conversation)
        messages = await database_sync_to_async(build_model_input)(self.ctx, s.context)
        request = [*messages, *self._items]
        return request, budget.measure(request, tools)

    async def _calibrate(self, reported: int, estimated: int) -> None:
        budget = self._budget
        ratio = await database_sync_to_async(context_budget.state_calibrate)(
            conversation_id=self.started.conversation.pk, reported=reported, estimated=estimated, previous=budget.ratio
        )
        self._budget = context_budget.Budget(window=budget.window, reply=budget.reply, ratio=ratio)

    async def _finish(self, status: str, error: str) -> Message:
        if self._finished is not None:  # a turn is saved once, whichever way it ends
            return self._finished
        self._saving = True
        items = tool_calls.answered(self._items)
        partial = "".join(self._step_text).strip()
        if status != Message.Status.COMPLETE and partial:
            # Keep the state consistent, and tell the model next turn that this answer was cut short.
            items.append({"role": "assistant", "content": partial + CUT_SHORT})
        self._finished = await _turn_finish(
            turn=self.started, status=status, content="".join(self._text).strip(), error=error, new_items=items
        )
        s = self.started  # counted once saved: never on the way to a first token
        await database_sync_to_async(self._meter.report, thread_sensitive=False)(
            user_id=s.user.pk, project_id=s.conversation.project_id, assistant_message_id=self._finished.pk
        )
        if self._too_long:  # a turn that failed for length must not leave the state bigger
            await database_sync_to_async(compaction.failed_turn_discard)(
                conversation_id=self.started.conversation.pk,
                version=self.started.state_version + 1,
                context=self.started.context,
            )
        return self._finished
