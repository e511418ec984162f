"""Which of a client's messages are new, and which conversation they go to (connect/models.py).

A user message is known by the digest of the history up to and including it: the roles and text of the
user, assistant and tool messages before it. System messages are left out of the digest: clients put
the date or their own state there, which would make every request look new. The same history sent again
(a retry, a client that resends everything) therefore digests the same and stores nothing twice.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date
from typing import Any

from django.db import IntegrityError, transaction

from accounts.models import ApiToken, User
from chat.models import Conversation, Message, Project
from chat.services import conversation_create
from connect.models import ClientConversation, ClientMessage

SPOKEN_ROLES = ("user", "assistant", "tool")


def message_text(message: dict[str, Any]) -> str:
    """A message's text: its string content, or its text parts joined (images and audio are left out)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def user_digests(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(digest, text) of each user message with text, in order."""
    spoken: list[list[str]] = []
    found = []
    for message in messages:
        role = str(message.get("role", ""))
        if role not in SPOKEN_ROLES:
            continue
        text = message_text(message)
        spoken.append([role, text])
        if role == "user" and text.strip():
            digest = hashlib.sha256(json.dumps(spoken, ensure_ascii=False).encode()).hexdigest()
            found.append((digest, text))
    return found


def conversation_key(*, token: ApiToken, header: str | None, today: date) -> str:
    """The X-Memora-Conversation value, or one conversation per token and day without it. A project-limited
    token's names are its project's own: the same name elsewhere is another conversation."""
    key = header if header else f"token:{token.pk}:{today.isoformat()}"
    return f"project:{token.project_id}:{key}"[:200] if token.project_id is not None and header else key


def conversation_for(*, user: User, key: str, project_id: int | None = None) -> Conversation:
    """The user's conversation for `key`, made on first use (titled by its first message), in the project
    `project_id` when the token is limited to one."""
    found = ClientConversation.objects.filter(user=user, key=key).select_related("conversation").first()
    if found is not None:
        return found.conversation
    try:
        with transaction.atomic():
            project = Project.objects.get(owner=user, pk=project_id) if project_id is not None else None
            conversation = conversation_create(user=user, project=project)
            ClientConversation.objects.create(user=user, key=key, conversation=conversation)
            return conversation
    except IntegrityError:  # another request made it meanwhile
        return ClientConversation.objects.select_related("conversation").get(user=user, key=key).conversation


def new_messages(*, conversation: Conversation, digests: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (digest, text) pairs not stored in `conversation` yet, in order."""
    stored = set(
        ClientMessage.objects.filter(conversation=conversation, digest__in=[d for d, _ in digests]).values_list(
            "digest", flat=True
        )
    )
    return [(digest, text) for digest, text in digests if digest not in stored]


def remember(*, conversation: Conversation, saved: list[tuple[str, Message]]) -> None:
    """Record the digests of the messages just saved."""
    ClientMessage.objects.bulk_create(
        [ClientMessage(conversation=conversation, message=message, digest=digest) for digest, message in saved],
        ignore_conflicts=True,
    )
