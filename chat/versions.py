"""A regenerated reply's versions: the conversation's latest reply may be written again (Regenerate, `POST
/api/conversations/{id}/regenerate`), and the versions it had stay reachable (‹ 1/2 › under it, and
`alternatives` in the API).

The shown version is the message's `content` (status, error), numbered `version`; the others are kept in
its `alternatives`, each with its own number, oldest first. The agent state holds only the shown one: the
turn that regenerates replaces the reply's part of the state, and showing another version rewrites that
part to it, so the next turn continues from what the page shows. Tool calls a version made are not kept
with it: a version shown again is its text alone.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _

from chat.models import AgentState, Conversation, Message
from chat.rejections import ConversationBusy, NothingToRetry
from chat.search.index import search_index_messages


def latest_reply(conversation: Conversation) -> Message | None:
    """The conversation's latest message when it is a reply that is not being written: the one reply
    Regenerate may write again (an earlier one has later messages that follow from it)."""
    latest = Message.objects.filter(conversation=conversation).order_by("-created_at", "-id").first()
    if latest is None or latest.role != Message.Role.ASSISTANT or latest.status == Message.Status.STREAMING:
        return None
    return latest


def _shown(reply: Message) -> dict[str, Any]:
    return {
        "version": reply.version,
        "content": reply.content,
        "status": reply.status,
        "error": reply.error,
        "created_at": reply.updated_at.isoformat() if reply.updated_at else None,
    }


def keep_shown(reply: Message, *, now: Any) -> None:
    """Before `reply` is written again: keep the version it shows among its alternatives, and number the
    coming one after every version so far (the caller saves `alternatives` and `version`)."""
    total = len(reply.alternatives) + 1
    reply.alternatives = [*reply.alternatives, _shown(reply)]
    reply.version = total + 1


def _replace_tail(context: list[dict[str, Any]], user_content: str, reply: str) -> list[dict[str, Any]] | None:
    """`context` with what follows the last user message saying `user_content` replaced by `reply` alone;
    None when that message is no longer in it (summarized away)."""
    for index in range(len(context) - 1, -1, -1):
        item = context[index]
        if item.get("role") == "user":
            if item.get("content") != user_content:
                return None
            return [*context[: index + 1], *([{"role": "assistant", "content": reply}] if reply else [])]
    return None


@transaction.atomic
def reply_version_show(*, reply: Message, version: int) -> Message:
    """Show another version of the conversation's latest reply: it becomes the message's content and the
    reply's part of the agent state. NothingToRetry when `reply` is not the latest reply or has no such
    version; ConversationBusy while a reply is being written."""
    conversation = Conversation.objects.select_for_update().get(pk=reply.conversation_id)
    if conversation.lock_token is not None:
        raise ConversationBusy()
    latest = latest_reply(conversation)
    if latest is None or latest.pk != reply.pk:
        raise NothingToRetry(_("Only the latest reply's versions can be shown."))
    reply = latest
    if version == reply.version:
        return reply
    chosen = _version(reply, version)
    others = [alt for alt in reply.alternatives if alt is not chosen]
    reply.alternatives = sorted([*others, _shown(reply)], key=lambda alt: int(alt.get("version") or 0))
    reply.version = version
    reply.content, reply.status, reply.error = chosen["content"], chosen["status"], chosen.get("error", "")
    reply.save(update_fields=["alternatives", "version", "content", "status", "error", "updated_at"])
    search_index_messages(messages=[reply])
    _state_follow(conversation, reply)
    return reply


def _version(reply: Message, version: int) -> dict[str, Any]:
    chosen = next((alt for alt in reply.alternatives if alt.get("version") == version), None)
    if chosen is None:
        raise NothingToRetry(_("This reply has no version %(version)s.") % {"version": version})
    return chosen


def _state_follow(conversation: Conversation, reply: Message) -> None:
    """The agent state's last exchange now ends with the shown version (the state row locked)."""
    user_message = (
        Message.objects.filter(conversation=conversation, role=Message.Role.USER, pk__lt=reply.pk)
        .order_by("-created_at", "-id")
        .first()
    )
    state = AgentState.objects.select_for_update().filter(conversation=conversation).first()
    if state is None or user_message is None:
        return
    context = _replace_tail(list(state.context), user_message.content, reply.content)
    if context is not None:
        AgentState.objects.filter(pk=state.pk).update(context=context, version=state.version + 1)
