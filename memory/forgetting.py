"""Forgetting that forgets (SPEC §8): a memory deleted permanently or purged leaves no copy of its text.

**Every copy of a memory's text is registered here.** `memories_forget` runs inside the deletion's
transaction (memory.services.memory_delete, memory_forget_all(purge=True)), before the rows go, and
hands each registered redactor the deleted memories (ids and sentences):

    from memory import forgetting
    forgetting.register_redactor("used-memories", my_redactor)   # my_redactor(forgotten: Forgotten) -> None

A redactor finds its copies **by memory id** where the copy records one (structural), and by the exact
sentence where it does not, in every form a copy can take (`Forgotten.forms`: plain, JSON-escaped with
`\\uXXXX`, and the marker's shortened excerpt), and removes or neutralises them. Rows with a ForeignKey
to the Memory and `on_delete=CASCADE` need no redactor: they go with it. The acceptance scan
(tests/test_forgetting_scan.py) searches every table and text column after each kind of deletion.

Registered copies (memory/apps.py):
- "markers": "Memory updated · …" markers in the user's conversations become "… · (deleted)".
- "runs": extraction-run records (judge input, raw output, applied and dropped operations, error);
  counts, status and timings stay.
- "agent-states": what is replayed to the model, in every agent state of the user: tool results
  ("Remembered: …"), assistant items and compaction summaries that quote the sentence get
  `DELETED_MEMORY` in its place; every tool call keeps its result.
- "admin-log": the admin's change log names a memory by its sentence.
- "term-index": ranking's term index of the user in this process (memory.recall.term_index) is dropped.
  Another web process's index keeps the text until the user's next turn there replaces it, or it is evicted.

The display log (chat.Message) keeps the reply the user saw until they delete the conversation.
Invalidation into history (update, retract, forget without purge) keeps the text: it can be restored.

Work in flight re-checks at commit: an extraction run's record is scrubbed when it finishes
(`run_scrub`, memory.extraction.run.Run.finish), and a turn's agent state when it is saved
(`state_filter`, chat.extensions.register_state_filter), against the memories deleted meanwhile; a
compaction summary made from a state that was redacted meanwhile is not saved
(chat.turn.compaction.state_compacted_save's `read`).

Adding a copy (used-memory records, suggestions, stored vectors, a search index): prefer a row with a
ForeignKey to the Memory (CASCADE); otherwise write a redactor here and register it in memory/apps.py,
then add the copy to tests/test_forgetting_scan.py's `learn_everything` so the scans prove it.
A copy of a *user's message* outside its conversation registers a conversation eraser instead
(chat.extensions.register_conversation_eraser), and one tied to the account an eraser in accounts.data.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q
from django.utils import translation
from django.utils.translation import gettext, gettext_noop

from accounts.middleware import background_language
from accounts.models import User
from chat.models import AgentState, ConversationMarker
from memory import recall, selectors
from memory.changes import MARKER_KIND
from memory.extraction.judge.request import parse_judge_input
from memory.models import ExtractionRun, Memory
from memory.notices import marker_excerpts

DELETED_MEMORY = "(a memory that was since deleted)"
DELETED_MESSAGE = "(a message that was since deleted)"
MARKER_DELETED = gettext_noop("(deleted)")  # in the marker, in its owner's language


def json_forms(text: str) -> list[str]:
    """`text` as it may sit inside JSON text: itself, with JSON's escapes, and with `\\uXXXX` escapes."""
    forms = [text, json.dumps(text, ensure_ascii=False)[1:-1], json.dumps(text)[1:-1]]
    return list(dict.fromkeys(forms))


def replace_all(text: str, forms: Iterable[str], replacement: str) -> str:
    for form in forms:
        if form and form in text:
            text = text.replace(form, replacement)
    return text


def redact_value(value: Any, forms: list[str], replacement: str) -> Any:
    """`value` (decoded JSON: dicts, lists, strings) with every form replaced in every string."""
    if isinstance(value, str):
        return replace_all(value, forms, replacement)
    if isinstance(value, list):
        return [redact_value(item, forms, replacement) for item in value]
    if isinstance(value, dict):
        return {key: redact_value(item, forms, replacement) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class Forgotten:
    """Memories deleted permanently, about to go: their ids and their sentences."""

    user_id: int
    contents: dict[int, str] = field(default_factory=dict)

    @property
    def ids(self) -> set[int]:
        return set(self.contents)

    def forms(self) -> list[str]:
        """Every sentence in every form a copy may hold it, longest first (a sentence that contains
        another is replaced whole)."""
        forms: set[str] = set()
        for content in self.contents.values():
            # The flush tool's result ends each sentence with one full stop ("Remembered: …."): without its own.
            for text in {content, " ".join(content.split()), content.rstrip(".")}:
                forms.update(json_forms(text))
        return sorted((f for f in forms if f.strip()), key=len, reverse=True)


Redactor = Callable[[Forgotten], None]
_redactors: dict[str, Redactor] = {}


def register_redactor(name: str, redactor: Redactor) -> None:
    """Register where a copy of memory text lives; it is called in the deletion's transaction."""
    _redactors[name] = redactor


def redactors() -> dict[str, Redactor]:
    return dict(_redactors)


def memories_forget(*, user_id: int, memory_ids: Iterable[int]) -> Forgotten:
    """Call every redactor for these memories of the user (inside the caller's transaction, before the
    rows are deleted). Returns what was forgotten."""
    rows = Memory.objects.filter(owner_id=user_id, pk__in=list(memory_ids)).values_list("pk", "content")
    forgotten = Forgotten(user_id=user_id, contents=dict(rows))
    if forgotten.contents:
        for redactor in _redactors.values():
            redactor(forgotten)
    return forgotten


# --- the copies memory itself makes --------------------------------------------------------------


def _marker_forms(forgotten: Forgotten) -> list[str]:
    excerpts = {form for content in forgotten.contents.values() for form in marker_excerpts(content)}
    return sorted(excerpts | set(forgotten.forms()), key=len, reverse=True)


def markers_redact(forgotten: Forgotten) -> None:
    """'Memory updated · Prefers small phones…' → 'Memory updated · (deleted)' (the excerpt too)."""
    forms = _marker_forms(forgotten)
    rows = ConversationMarker.objects.select_for_update().filter(
        conversation__owner_id=forgotten.user_id, kind=MARKER_KIND
    )
    # The marker was written in its owner's language setting (memory.notices); so is what replaces the text.
    with translation.override(background_language(User.objects.filter(pk=forgotten.user_id).first())):
        deleted = gettext(MARKER_DELETED)
    for marker in rows:
        text = replace_all(marker.text, forms, deleted)
        data = _marker_data_redact(marker.data, forms)
        if text != marker.text or data != marker.data:
            ConversationMarker.objects.filter(pk=marker.pk).update(text=text, data=data)


def _marker_data_redact(data: Any, forms: list[str]) -> Any:
    """The marker's data (memory.notices.marker_data) with a forgotten memory's change marked deleted and
    its text gone; the marker then says "(deleted)" in each reader's language."""
    if not isinstance(data, dict) or not isinstance(data.get("changes"), list):
        return data
    changes = []
    for item in data["changes"]:
        content = str(item.get("content", ""))
        if content and replace_all(content, forms, "") != content:
            item = {**item, "content": "", "deleted": True}
        changes.append(item)
    return {**data, "changes": changes}


_MEMORY_LINE = re.compile(r"^\[(\d+)\] .*$", re.MULTILINE)
_MESSAGE_LINE = re.compile(r"^(\d+)\. ")
RUN_TEXT_FIELDS = ("judge_input", "raw_output", "applied_ops", "dropped_ops", "error")


def _judge_input_redact(judge_input: Any, ids: set[int]) -> Any:
    """The judge input's "[id] sentence" lines of the forgotten memories, structurally by id."""

    def line(match: re.Match[str]) -> str:
        return f"[{match[1]}] {DELETED_MEMORY}" if int(match[1]) in ids else match[0]

    if not isinstance(judge_input, list):
        return judge_input
    return [
        {**item, "content": _MEMORY_LINE.sub(line, item["content"])}
        if isinstance(item, dict) and isinstance(item.get("content"), str)
        else item
        for item in judge_input
    ]


def _ops_redact(ops: Any, ids: set[int], forms: list[str]) -> Any:
    """Operations naming a forgotten memory (by id) lose their content; others by the sentence."""
    if not isinstance(ops, list):
        return ops
    result = []
    for op in ops:
        if isinstance(op, dict) and op.get("id") in ids and "content" in op:
            op = {**op, "content": DELETED_MEMORY}
        result.append(redact_value(op, forms, DELETED_MEMORY))
    return result


def run_redact(run: ExtractionRun, *, ids: set[int], forms: list[str], replacement: str = DELETED_MEMORY) -> list[str]:
    """Redact the forgotten memories from one run record in place; the names of the fields changed."""
    new = {
        "judge_input": redact_value(_judge_input_redact(run.judge_input, ids), forms, replacement),
        "raw_output": replace_all(run.raw_output, forms, replacement),
        "applied_ops": _ops_redact(run.applied_ops, ids, forms),
        "dropped_ops": _ops_redact(run.dropped_ops, ids, forms),
        "error": replace_all(run.error, forms, replacement),
    }
    changed = [name for name, value in new.items() if value != getattr(run, name)]
    for name in changed:
        setattr(run, name, new[name])
    return changed


def runs_redact(forgotten: Forgotten) -> None:
    """Every run record of the user: the memories' lines, operations and any quote of their sentences.
    The run a forgotten memory came from (Memory.run) is one of them; so is every later run shown it."""
    ids, forms = forgotten.ids, forgotten.forms()
    rows = ExtractionRun.objects.select_for_update().filter(owner_id=forgotten.user_id).only("pk", *RUN_TEXT_FIELDS)
    for run in rows.iterator(chunk_size=200):
        changed = run_redact(run, ids=ids, forms=forms)
        if changed:
            ExtractionRun.objects.filter(pk=run.pk).update(**{name: getattr(run, name) for name in changed})


def context_redact(context: list[dict[str, Any]], forms: list[str], replacement: str) -> list[dict[str, Any]]:
    """An agent state's items with every form replaced in their text (tool results, assistant items,
    summaries, user items): the items, their roles and every tool call's id and result stay."""
    return [redact_value(item, forms, replacement) for item in context]


def agent_states_redact(forgotten: Forgotten) -> None:
    """What is replayed to the model: every agent state of the user. The rows are locked, so a turn
    saving its state meanwhile (chat.services.turn_finish, which locks it first) either saved before
    (and is redacted here) or saves after and re-checks (`state_filter`)."""
    forms = forgotten.forms()
    states_redact(user_id=forgotten.user_id, forms=forms, replacement=DELETED_MEMORY)


def states_redact(*, user_id: int, forms: list[str], replacement: str, exclude: Q | None = None) -> int:
    rows = AgentState.objects.select_for_update().filter(conversation__owner_id=user_id)
    if exclude is not None:
        rows = rows.exclude(exclude)
    changed = 0
    for state in rows.only("pk", "context").iterator(chunk_size=100):
        context = context_redact(state.context, forms, replacement)
        if context != state.context:
            AgentState.objects.filter(pk=state.pk).update(context=context)
            changed += 1
    return changed


def admin_log_redact(forgotten: Forgotten) -> None:
    """The admin's change log keeps an object's name (a memory's is its sentence)."""
    from django.contrib.admin.models import LogEntry
    from django.contrib.contenttypes.models import ContentType

    kind = ContentType.objects.get_for_model(Memory)
    entries = LogEntry.objects.filter(content_type=kind, object_id__in=[str(pk) for pk in forgotten.ids])
    entries.update(object_repr=MARKER_DELETED, change_message="")


# --- work in flight ------------------------------------------------------------------------------


def judge_messages_redact(judge_input: Any, *, message_ids: list[int], gone: set[int]) -> Any:
    """The judge input with the numbered lines (and their continuation lines) of the messages in
    `gone` replaced, structurally: the judge's numbers follow `message_ids` (a batch's messages, none
    empty) in order. When the numbers cannot be matched to the ids, every message line goes."""
    if not isinstance(judge_input, list):
        return judge_input

    def lines_redact(text: str) -> str:
        out: list[str] = []
        section, skipping = "", False
        numbered = sum(1 for line in text.splitlines() if _MESSAGE_LINE.match(line))
        matched = numbered == len(message_ids)
        for line in text.splitlines():
            if line.startswith("New messages"):
                section = "messages"
            if section == "messages" and (m := _MESSAGE_LINE.match(line)):
                number = int(m[1])
                pk = message_ids[number - 1] if matched and 0 < number <= len(message_ids) else None
                skipping = not matched or pk in gone
                out.append(f"{number}. {DELETED_MESSAGE}" if skipping else line)
            elif section == "messages" and skipping and line.startswith("   "):
                continue
            else:
                skipping = False
                out.append(line)
        return "\n".join(out)

    return [
        {**item, "content": lines_redact(item["content"])}
        if isinstance(item, dict) and item.get("role") == "user" and isinstance(item.get("content"), str)
        else item
        for item in judge_input
    ]


def message_forms(texts: Iterable[str]) -> list[str]:
    """A message's text in every form a run record may quote it (as typed, on one line, JSON-escaped)."""
    forms: set[str] = set()
    for text in texts:
        for variant in {text, text.strip(), " ".join(text.split())}:
            if len(variant) >= MESSAGE_QUOTE_MIN:
                forms.update(json_forms(variant))
    return sorted(forms, key=len, reverse=True)


# A shorter message ("ok", "yes") is not searched for in other text: its numbered line goes, by id.
MESSAGE_QUOTE_MIN = 12


def run_messages_redact(run: ExtractionRun, *, gone: set[int], texts: Iterable[str]) -> list[str]:
    """Redact deleted messages from one run record in place (their lines by id, quotes by text)."""
    before = run.judge_input
    ids = [int(pk) for pk in run.message_ids or []]
    run.judge_input = judge_messages_redact(run.judge_input, message_ids=ids, gone=gone)
    changed = run_redact(run, ids=set(), forms=message_forms(texts), replacement=DELETED_MESSAGE)
    if run.judge_input != before and "judge_input" not in changed:
        changed.append("judge_input")
    return changed


def run_scrub(run: ExtractionRun) -> bool:
    """At a run's end: the memories it was shown, or the messages it covered, that were deleted while
    it ran leave no copy in its record (their text is known from the run's own judge input). One query
    when nothing was deleted. True when the record was changed (in place)."""
    judge_text = "\n".join(
        item.get("content", "") for item in run.judge_input if isinstance(item, dict) and item.get("role") == "user"
    )
    shown, numbered = parse_judge_input(judge_text)
    ids = [int(pk) for pk in run.message_ids or []]
    alive = selectors.memory_and_message_ids_alive(memory_ids=list(shown), message_ids=ids)
    gone_memories = {pk for pk in shown if ("memory", pk) not in alive}
    gone_messages = {pk for pk in ids if ("message", pk) not in alive}
    changed: list[str] = []
    if gone_memories:
        gone = Forgotten(user_id=run.owner_id, contents={pk: shown[pk] for pk in gone_memories})
        changed += run_redact(run, ids=gone.ids, forms=gone.forms())
    if gone_messages:
        texts = [text for (_, text), pk in zip(numbered, ids, strict=False) if pk in gone_messages]
        changed += run_messages_redact(run, gone=gone_messages, texts=texts)
    return bool(changed)


# Memories a turn in this process may quote, by user message id: (memory id, sentence) pairs, kept in
# this process's memory only while the turn runs (never written anywhere), so the turn's save can
# re-check them (`state_filter`). Bounded: an entry a turn never collected is dropped after an hour.
_TURN_MEMORIES: dict[int, tuple[float, int, dict[int, str]]] = {}
_TURN_MEMORIES_LOCK = threading.Lock()
TURN_MEMORIES_TTL = 3600.0


def turn_memories_note(*, user_id: int, user_message_id: int, contents: dict[int, str]) -> None:
    now = time.monotonic()
    with _TURN_MEMORIES_LOCK:
        for key, (since, _, _) in list(_TURN_MEMORIES.items()):
            if now - since > TURN_MEMORIES_TTL:
                del _TURN_MEMORIES[key]
        _, _, known = _TURN_MEMORIES.get(user_message_id, (now, user_id, {}))
        _TURN_MEMORIES[user_message_id] = (now, user_id, {**known, **contents})


def state_filter(user_id: int, user_message_id: int, context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """chat's state filter: a turn saving its agent state drops the sentences of the memories it could
    quote that were deleted while it ran (called in the save's transaction, the state row locked)."""
    with _TURN_MEMORIES_LOCK:
        entry = _TURN_MEMORIES.pop(user_message_id, None)
    if entry is None or entry[1] != user_id or not entry[2]:
        return context
    known = entry[2]
    alive = selectors.memory_ids_existing(ids=set(known))
    gone = Forgotten(user_id=user_id, contents={pk: text for pk, text in known.items() if pk not in alive})
    if not gone.contents:
        return context
    return context_redact(context, gone.forms(), DELETED_MEMORY)


def register_defaults() -> None:
    register_redactor("markers", markers_redact)
    register_redactor("runs", runs_redact)
    register_redactor("agent-states", agent_states_redact)
    register_redactor("admin-log", admin_log_redact)
    register_redactor("term-index", lambda forgotten: recall.kept_indexes.forget(forgotten.user_id))
