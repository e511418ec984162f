"""Writing one imported conversation: the conversation with its original title and times, its display log,
an agent state built from the same messages (so it can be continued), and its search entries, in one
transaction. Imported user messages are `skipped` for extraction: nothing becomes a memory by itself
(learning from them is a separate, reviewed pass: imports.learning)."""

from __future__ import annotations

from django.db import transaction

from accounts.models import User
from chat.models import AgentState, Conversation, Message, Project
from chat.search.index import search_index_messages
from chat.services import title_from
from imports.formats import Chat
from imports.models import ChatImport, ImportedConversation

UPDATE_BATCH = 500


@transaction.atomic
def conversation_land(
    *, user: User, chat_import: ChatImport, chat: Chat, project: Project | None = None
) -> Conversation:
    first_user = next((t.content for t in chat.turns if t.role == "user"), chat.turns[0].content)
    conversation = Conversation.objects.create(
        owner=user,
        title=chat.title or title_from(first_user),
        imported_from=chat_import.source,
        imported_id=chat.source_id,
        project=project,
    )
    AgentState.objects.create(
        conversation=conversation, context=[{"role": t.role, "content": t.content} for t in chat.turns]
    )
    messages = Message.objects.bulk_create(
        [
            Message(
                conversation=conversation,
                user=user,
                role=t.role,
                content=t.content,
                memory_status=Message.MemoryStatus.SKIPPED if t.role == "user" else "",
            )
            for t in chat.turns
        ]
    )
    # The original times: saving sets "now" on auto_now fields, so they are written after the insert.
    created = chat.created_at or messages[0].created_at
    for message, turn in zip(messages, chat.turns, strict=True):
        message.created_at = message.updated_at = turn.created_at or created
    Message.objects.bulk_update(messages, ["created_at", "updated_at"], batch_size=UPDATE_BATCH)
    conversation.created_at = created
    conversation.updated_at = max(chat.updated_at or created, messages[-1].created_at)
    Conversation.objects.filter(pk=conversation.pk).update(
        created_at=conversation.created_at, updated_at=conversation.updated_at
    )
    search_index_messages(messages=messages, replace=False, retitled=conversation)
    ImportedConversation.objects.create(chat_import=chat_import, conversation=conversation)
    return conversation
