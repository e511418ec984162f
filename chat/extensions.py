"""Extension points chat owns and other apps plug into (the memory app registers in its AppConfig).

Chat works, and its pages render, with nothing registered here.

- context providers: add a block to the model input of each turn; never stored in the agent state.
- tools: functions the chat model may call during a turn (bounded in steps). A tool may say, per turn,
  whether it can act (`available(ctx)`); one that cannot is neither offered to the model nor run. It
  may name what the reply shows while it runs (`activity_label`, e.g. "Updating memory…").
- `turn_saving`: sent inside the transaction that saves a turn's reply, before the reply is annotated
  for the "done" event: work that belongs with the saved reply but must not delay its first token.
- `turn_finished`: sent after the turn's transaction commits, never on rollback.
- page blocks: markup other apps add to named slots of the chat pages (`PAGE_SLOTS`: header links,
  the user menu, the start page's lead, ...), rendered by the `page_blocks` template tag (chat_tags).
- notices: `notify_user(user_id, html)` appends a rendered fragment to the notices area of every open
  chat page of the user, through the channel layer group `user_group(user_id)` (event "chat.notice",
  sent by chat.push.send_event).
- demo hooks (chat.llm.demo): how another app's feature takes part in the offline demo model, one
  registration each (`register_demo`): a tool trigger (which tool the demo calls for a user's text), a
  JSON responder (answers JSON calls) and a result wording (a tool's result in the user's language).
- conversation markers (chat.markers.marker_add): a lasting note in a conversation's timeline, worded
  in the reader's language by the renderer its app registers (`register_marker_renderer`).
- message annotators: set attributes on saved messages before the API or a page shows them (the memory
  app sets `memories_used`, what a reply's memory block held, and fills the "reply" page slot).
- state filters: rewrite the agent state a turn is about to save, in the save's transaction (the state
  row locked): how a deletion that happened while the turn ran reaches what the turn writes.
- conversation erasers: called in the transaction that deletes conversations, before the rows go,
  for every copy of their messages kept outside them (run records, other conversations' tool results,
  a search index).
- project enders: called in the transaction that ends (deletes) a project, before its row goes, for what
  other apps keep in it (memory moves the project's memories to the user or deletes them permanently).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from django.dispatch import Signal

from chat import push
from chat.marker_kinds import register_marker_renderer as register_marker_renderer
from chat.push import user_group as user_group  # the notices' group, named here for other apps
from core.registry import Registry

if TYPE_CHECKING:
    from accounts.models import User
    from chat.models import Conversation, Message


@dataclass(frozen=True)
class TurnContext:
    """Who and what a turn is about. Built by the server; the model never supplies any of it."""

    user: User
    conversation: Conversation
    user_message: Message
    # The reply being written (None outside a turn, e.g. a tool run by hand).
    assistant_message: Message | None = None
    # Each context provider's block in estimated tokens, as last built (chat.turn.metered counts the memory's).
    block_tokens: dict[str, int] = field(default_factory=dict, compare=False, repr=False)


ContextProvider = Callable[[TurnContext], "str | None"]


class Tool(Protocol):
    """A tool may also define `available(ctx) -> bool`: cheap, no queries (it runs on the event loop
    before every model request), False when the tool cannot act in this turn. Without it, always available.
    And `activity_label: str`, what the reply shows while the tool runs (else a generic "Working…")."""

    name: str
    description: str
    parameters: dict[str, Any]

    def run(self, ctx: TurnContext, arguments: dict[str, Any]) -> str:
        """Runs synchronously (in a worker thread); returns the text the model sees as the result."""
        ...


_context_providers: dict[str, ContextProvider] = {}
_tools: dict[str, Tool] = {}

# Sent with: user_id, conversation_id, user_message_id, assistant_message_id, status.
turn_finished = Signal()
# Sent with: user_id, assistant_message_id. A receiver's failure must not cost the turn its reply: it
# catches its own errors (in a savepoint of its own, as it runs inside the save's transaction).
turn_saving = Signal()

# Sent inside the transaction that replaces the user's latest message with edited words (chat.edits), before
# the old message and its copies are deleted: `user_id`, `message_id`. A receiver undoes what it drew from it.
user_message_edited = Signal()


def register_context_provider(name: str, provider: ContextProvider) -> None:
    _context_providers[name] = provider


# Called on the event loop as a turn is about to start, with the user's id and the new message's text, before
# anything is saved: it may start slow work the turn's context will need (memory embeds the message
# meanwhile) and must return at once.
TurnPrefetch = Callable[[int, str], None]
_turn_prefetchers: Registry[TurnPrefetch] = Registry("a turn prefetch")
register_turn_prefetch = _turn_prefetchers.register


def turn_prefetch(user_id: int, text: str) -> None:
    """Start what the registered prefetchers start for this turn; a failure is only logged."""
    _turn_prefetchers.each_logged(lambda prefetch: prefetch(user_id, text))


def context_providers() -> list[ContextProvider]:
    return list(_context_providers.values())


def named_context_providers() -> list[tuple[str, ContextProvider]]:
    return list(_context_providers.items())


# Whether a user may spend tokens now (usage quotas): each gate raises a TurnRejected (429 with Retry-After)
# when not. Checked when a turn, a retry or an API request starts, and before background memory work.
SpendGate = Callable[[int], None]
_spend_gates: Registry[SpendGate] = Registry("spend gate")
register_spend_gate = _spend_gates.register


def spend_check(user_id: int) -> None:
    """Raise the first gate's TurnRejected if the user may not spend tokens now."""
    for gate in _spend_gates.entries():
        gate(user_id)


def register_tool(tool: Tool) -> None:
    _tools[tool.name] = tool


def tool_available(tool: Tool, ctx: TurnContext | None) -> bool:
    """Whether `tool` can act in the turn `ctx` (every tool can when no turn is named)."""
    check: Callable[[TurnContext], bool] | None = getattr(tool, "available", None)
    return ctx is None or check is None or bool(check(ctx))


def get_tool(name: str, ctx: TurnContext | None = None) -> Tool | None:
    """The tool called `name`, or None when there is none or it is not available in the turn `ctx`."""
    tool = _tools.get(name)
    return tool if tool is not None and tool_available(tool, ctx) else None


def tool_activity_label(name: str) -> str | None:
    """What the reply shows while the tool called `name` runs, when the tool names it."""
    label: str | None = getattr(_tools.get(name), "activity_label", None)
    return label or None


def tool_schemas(ctx: TurnContext | None = None) -> list[dict[str, Any]]:
    """The registered tools (those available in the turn `ctx`) in the Chat Completions `tools` format."""
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in _tools.values()
        if tool_available(t, ctx)
    ]


# --- state filters and conversation erasers (forgetting, SPEC §8) ----------------------------------

# (user_id, user_message_id, context) -> the context to save.
StateFilter = Callable[[int, int, list[dict[str, Any]]], list[dict[str, Any]]]
_state_filters: Registry[StateFilter] = Registry("state filter")
register_state_filter = _state_filters.register
state_filters = _state_filters.entries


@dataclass(frozen=True)
class ConversationsErased:
    """Conversations about to be deleted: their owner, ids, and their messages' ids and text."""

    user_id: int
    conversation_ids: list[Any]
    messages: dict[int, str]


# Each erases a copy of conversation text kept outside the conversation's own rows (which cascade).
ConversationEraser = Callable[[ConversationsErased], None]
_conversation_erasers: Registry[ConversationEraser] = Registry("conversation eraser")
register_conversation_eraser = _conversation_erasers.register
conversation_erasers = _conversation_erasers.entries


@dataclass(frozen=True)
class ProjectEnding:
    """A project about to be deleted: its owner and id, and what becomes of what it holds ("delete": its
    conversations are deleted and its memories deleted permanently; "move": both become the user's)."""

    user_id: int
    project_id: int
    memories: str


# What another app does with its rows of a project that ends (before the project row goes).
ProjectEnder = Callable[[ProjectEnding], None]
_project_enders: Registry[ProjectEnder] = Registry("project ender")
register_project_ender = _project_enders.register
project_enders = _project_enders.entries
project_enders_registered = _project_enders.registered  # a test seam


# --- page blocks ---------------------------------------------------------------------------------

# The slots of the chat pages (chat/templates/chat/) where other apps add markup. Where a slot has
# text of its own, chat's template shows it only when no block is registered there.
PAGE_SLOTS = {
    "header": "the page header, after the model badge: links and status badges",
    "user-menu": "the sidebar's user menu, before Settings → API tokens: links",
    "start-lead": "the start page's lead paragraph, in place of chat's own",
    "empty-conversation": "under the empty conversation's title",
    "noscript": "continues the no-JavaScript note's sentence 'You can still read this conversation, "
    "rename or delete it' (before its full stop)",
    "delete-note": "the delete page, after 'This cannot be undone.': what else the deletion keeps or removes",
    "delete-confirm": "appended to the delete confirmation, an attribute value: plain text, led by a space",
    "conversation": "the conversation page, before the messages (e.g. a poller)",
    "reply": "under an assistant reply (`message` in the context, as annotated by the message annotators)",
    "project": "the project page, after its conversations (`project` in the context): what else it holds",
    "project-end": "the page that ends a project, before its choices: what ending it does to what else it holds",
}

# A block is the name of a template rendered with the page's own context (as `{% include %}` would:
# `user`, `request`, `conversation` where there is one, ...), or a function of that context (flattened
# to a dict) returning rendered, already-escaped HTML, for a block that needs a query.
PageBlock = str | Callable[[dict[str, Any]], str]

_page_blocks: dict[str, dict[str, PageBlock]] = {}


def register_page_block(slot: str, name: str, block: PageBlock) -> None:
    if slot not in PAGE_SLOTS:
        raise ValueError(f"No chat page slot {slot!r}; the slots are {', '.join(PAGE_SLOTS)}.")
    _page_blocks.setdefault(slot, {})[name] = block


def page_blocks(slot: str) -> list[PageBlock]:
    return list(_page_blocks.get(slot, {}).values())


# --- message annotators ---------------------------------------------------------------------------

# Sets attributes on saved messages (all of one conversation, or one reply), with a constant number of
# queries for the whole list: run before the API serialises messages (MessageOut.memories_used, [] when
# nothing set it) and before the pages render them (the "reply" slot reads what it set).
MessageAnnotator = Callable[["list[Message]"], None]
_message_annotators: Registry[MessageAnnotator] = Registry("message annotator")
register_message_annotator = _message_annotators.register


def annotate_messages(messages: list[Message]) -> list[Message]:
    """`messages`, annotated by every registered annotator (a failing one is logged and skipped)."""
    _message_annotators.each_logged(lambda annotator: annotator(messages))
    return messages


# --- notices -------------------------------------------------------------------------------------

NOTICE_EVENT = "chat.notice"


class NoticeNotSent(Exception):
    """The channel layer failed to take a notice (chat.push logged it; the pages poll)."""


def notify_user(user_id: int, html: str, *, translations: dict[str, str] | None = None) -> bool:
    """Append `html` (rendered, already-escaped) to the notices area of the user's open chat pages, in
    any process the channel layer reaches. `translations` may give the same notice rendered in other
    languages (by language code): each page shows the one in its own language, else `html`. False when
    there is no channel layer; NoticeNotSent when the layer failed (the caller decides whether a missed
    notice matters). Call it after commit."""
    event: dict[str, Any] = {"type": NOTICE_EVENT, "html": html}
    if translations:
        event["translations"] = translations
    outcome = push.send_event(event, user_id=user_id)
    if outcome is push.Outcome.DOWN:
        raise NoticeNotSent(f"the notice to user {user_id} was not sent: the channel layer is down")
    return outcome is push.Outcome.SENT


# --- the offline demo model's hooks (chat.llm.demo) ----------------------------------------------

# A tool trigger returns the name of a tool the demo model calls for the latest user text (given the
# names of the tools offered), or `(name, arguments)` for a tool that takes some, or None. A JSON
# responder answers a JSON call (complete_json) or says None to leave it to the next one. A tool's result
# is written for the model, in English; the demo model, which relays it word for word, asks the result
# wordings for the same news in the user's language (None: not a result this hook knows).
DemoToolTrigger = Callable[[str, set[str]], "str | tuple[str, dict[str, Any]] | None"]
DemoJsonResponder = Callable[[list[dict[str, Any]]], "str | None"]
DemoResultWording = Callable[[str], "str | None"]


@dataclass(frozen=True)
class DemoHooks:
    """How one feature of another app takes part in the offline demo model; each hook is optional."""

    tool_trigger: DemoToolTrigger | None = None
    json_responder: DemoJsonResponder | None = None
    result_wording: DemoResultWording | None = None


_demo_hooks: dict[str, DemoHooks] = {}


def register_demo(
    name: str,
    *,
    tool_trigger: DemoToolTrigger | None = None,
    json_responder: DemoJsonResponder | None = None,
    result_wording: DemoResultWording | None = None,
) -> None:
    """Register (again: replace) a feature's demo hooks; asked in the order of first registration."""
    _demo_hooks[name] = DemoHooks(tool_trigger, json_responder, result_wording)


def demo_tool_triggers() -> list[DemoToolTrigger]:
    return [h.tool_trigger for h in _demo_hooks.values() if h.tool_trigger is not None]


def demo_json_responders() -> list[DemoJsonResponder]:
    return [h.json_responder for h in _demo_hooks.values() if h.json_responder is not None]


def demo_result_wordings() -> list[DemoResultWording]:
    return [h.result_wording for h in _demo_hooks.values() if h.result_wording is not None]
