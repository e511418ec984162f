"""Chat data: a conversation, its agent state (for the model) and its display messages (for people).

The two are kept apart on purpose: the state can be compacted or rewritten for the model without
touching what the user sees, and memory extraction reads the user's original words from `Message`.
"""

from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from chat.marker_kinds import wording


class Project(models.Model):
    """One piece of work of a user's (a thesis, a trip, a client): its conversations, its own memories and
    instructions sent with each of its turns. How its chats use memory is its `memory_mode` (SPEC §9)."""

    class MemoryMode(models.TextChoices):
        # The user's general memories and the project's own; learns into either.
        SHARED = "shared", _("Shared: uses your memories and the project's")
        # Only the project's memories, used and learned: nothing general goes in, nothing learned leaves.
        ISOLATED = "isolated", _("Isolated: uses and learns only the project's memories")
        # No memory used or learned, like a temporary chat.
        OFF = "off", _("Off: no memory used or learned")

    NAME_MAX = 100
    INSTRUCTIONS_MAX = 2000

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="projects")
    name = models.CharField(max_length=NAME_MAX)
    instructions = models.TextField(max_length=INSTRUCTIONS_MAX, blank=True)
    memory_mode = models.CharField(max_length=16, choices=MemoryMode.choices, default=MemoryMode.SHARED)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["owner", "name"], name="project_owner_name")]

    def __str__(self) -> str:
        return self.name

    @property
    def uses_memory(self) -> bool:
        return self.memory_mode != self.MemoryMode.OFF


class Conversation(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="conversations")
    title = models.CharField(max_length=200, blank=True)
    # Temporary: nothing is learned from it and no memory is used in it.
    temporary = models.BooleanField(default=False)
    # The piece of work it belongs to (null: none). Ending a project moves or deletes its conversations
    # first (chat.projects), so the database's SET_NULL only guards a forgotten path.
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.SET_NULL, related_name="conversations")
    # The chat model its turns use (chat.llm.catalogue); "": the default model of the moment.
    model = models.CharField(max_length=200, blank=True)
    # Kept at the top of the conversation list.
    pinned = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # The per-conversation turn lock, held as a lease: the process running the turn renews it every
    # few seconds (chat/turn/leases.py), so a turn whose process died is found and closed within seconds.
    lock_token = models.UUIDField(null=True, blank=True, editable=False)
    lock_expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    # Which process runs the turn ("host:pid:boot"), so a restarted server recovers its own dead turns at once.
    lock_owner = models.CharField(max_length=200, blank=True, editable=False)
    # Stop asked for the running turn (from any tab, any process, or the API); cleared by the next turn.
    stop_requested = models.BooleanField(default=False, editable=False)
    # Brought in from another product's export (the imports app): which product, and its own id for the
    # conversation, so importing the same export again adds nothing it already has.
    imported_from = models.CharField(max_length=16, blank=True, default="", editable=False)
    imported_id = models.CharField(max_length=200, blank=True, default="", editable=False)

    class Meta:
        ordering = ["-updated_at"]
        indexes = [models.Index(fields=["owner", "-updated_at"], name="conv_owner_updated")]
        constraints = [
            models.UniqueConstraint(
                fields=["owner", "imported_from", "imported_id"],
                condition=~Q(imported_id=""),
                name="conv_imported_once",
            )
        ]

    def __str__(self) -> str:
        return self.title or "New conversation"

    @property
    def display_title(self) -> str:
        return self.title or "New conversation"


class AgentState(models.Model):
    """What the agent runtime needs to continue: the model message list, in Chat Completions format."""

    conversation = models.OneToOneField(Conversation, on_delete=models.CASCADE, related_name="agent_state")
    context = models.JSONField(default=list, blank=True)
    # Optimistic concurrency: a save must name the version it read.
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)
    # Compaction (chat.turn.compaction): how often the oldest part of `context` was replaced by a summary,
    # and the last user message (display log) whose turn the summary covers, where the page shows it.
    compactions = models.PositiveIntegerField(default=0)
    summarized_through = models.ForeignKey(
        "Message", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", editable=False
    )
    # Set while a background compaction is queued or running, so there is at most one per conversation.
    compacting_since = models.DateTimeField(null=True, blank=True, editable=False)
    # The state version a background compaction last ran for: never twice for the same state (its summary
    # calls hold the provider, and a state that did not change would be summarized the same way again).
    compacted_version = models.PositiveIntegerField(null=True, blank=True, editable=False)
    # The provider's own prompt size over our estimate (chat.llm.tokens.calibrated_ratio); None until reported.
    token_ratio = models.FloatField(null=True, blank=True, editable=False)
    # A context window the provider stated when refusing a request, when smaller than CHAT_CONTEXT_TOKENS.
    context_window = models.PositiveIntegerField(null=True, blank=True, editable=False)

    def __str__(self) -> str:
        return f"State of {self.conversation_id} (v{self.version}, {len(self.context)} messages)"


class Message(models.Model):
    """The display log: what the page shows, the user's original words and the assistant's answers."""

    class Role(models.TextChoices):
        USER = "user", _("User")
        ASSISTANT = "assistant", _("Assistant")

    class Status(models.TextChoices):
        COMPLETE = "complete", _("Complete")
        STREAMING = "streaming", _("Streaming")
        ERROR = "error", _("Error")
        INTERRUPTED = "interrupted", _("Interrupted")

    class MemoryStatus(models.TextChoices):
        PENDING = "pending", _("Pending")
        PROCESSED = "processed", _("Processed")
        SKIPPED = "skipped", _("Skipped")
        NOT_APPLICABLE = "", _("Not applicable")

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages")
    # Denormalised owner so a user's pending messages can be found across conversations.
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_messages")
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.COMPLETE)
    error = models.CharField(max_length=500, blank=True)
    # A regenerated reply's other versions (chat.versions), oldest first: {"version", "content", "status",
    # "error", "created_at"}; the shown one is `content`, numbered `version` among them all.
    alternatives = models.JSONField(default=list, blank=True)
    version = models.PositiveSmallIntegerField(default=1)
    # Only user messages take part in memory extraction; assistant messages stay "".
    memory_status = models.CharField(max_length=16, choices=MemoryStatus.choices, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["conversation", "created_at", "id"], name="msg_conv_order"),
            models.Index(fields=["user", "created_at", "id"], name="msg_user_order"),
            models.Index(
                fields=["user", "id"],
                name="msg_user_pending",
                condition=Q(role="user", memory_status="pending"),
            ),
            # The crash-recovery sweep looks at the few replies being written, every few seconds.
            models.Index(fields=["conversation"], name="msg_streaming", condition=Q(status="streaming")),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"

    @property
    def offers_retry(self) -> bool:
        """A reply that failed or was stopped: as the conversation's latest message, it offers Retry, which
        writes it again in place (an earlier one has later messages that depend on it)."""
        return self.role == self.Role.ASSISTANT and self.status in (self.Status.ERROR, self.Status.INTERRUPTED)

    @property
    def offers_regenerate(self) -> bool:
        """A complete reply: as the conversation's latest message, it offers another version (chat.versions)."""
        return self.role == self.Role.ASSISTANT and self.status == self.Status.COMPLETE


class ConversationMarker(models.Model):
    """A small, lasting note in a conversation's timeline at the moment something happened beside the
    messages ("Memory updated · Prefers small phones…"). Other apps add them through chat.markers;
    `kind` is theirs to name (a CSS class and a filter), chat only stores and shows them."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="markers")
    kind = models.SlugField(max_length=40)
    text = models.CharField(max_length=300)
    link = models.CharField(max_length=500, blank=True)
    link_text = models.CharField(max_length=60, blank=True)
    # What happened, for its app to word in the reader's language (chat.marker_kinds); {} for a marker
    # whose `text` is all it has.
    data = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["conversation", "created_at", "id"], name="marker_conv_order")]

    def __str__(self) -> str:
        return f"{self.kind}: {self.text[:60]}"

    def shown(self) -> tuple[str, str]:
        """(text, link text) in the active language."""
        return wording(self)


class TurnStart(models.Model):
    """One model turn started (a retry is one too): what CHAT_USER_TURNS_PER_MINUTE and
    CHAT_ADDRESS_TURNS_PER_MINUTE count. Apart from the conversation and its messages on purpose, so
    deleting them resets no limit; a deleted account leaves its rows (user null) to its address's count.
    Holds no words, only who, from where and when; rows older than a few minutes are pruned."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    # The client's address as the web server saw it (REMOTE_ADDR; "" when unknown).
    address = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [
            models.Index(fields=["user", "started_at"], name="turnstart_user"),
            models.Index(fields=["address", "started_at"], name="turnstart_address"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} from {self.address or '?'} at {self.started_at:%Y-%m-%d %H:%M:%S}"


class SearchTermsField(models.TextField):
    """A text's index terms (chat.terms), space-separated. On PostgreSQL the column is a `tsvector` of the
    built-in `simple` configuration (one lexeme per term, no stemming of its own, no positions); elsewhere
    it is text that a full-text table indexes (SQLite: FTS5, chat/search/sqlite.py). Never read back."""

    def db_type(self, connection: Any) -> str | None:
        return "tsvector" if connection.vendor == "postgresql" else super().db_type(connection)

    def get_placeholder(self, value: Any, compiler: Any, connection: Any) -> str:
        return "strip(to_tsvector('simple', %s))" if connection.vendor == "postgresql" else "%s"


class SearchEntry(models.Model):
    """One searchable text of a user's, for conversation search (chat/search/): a message (either role) or,
    with no message, a conversation's title. Written in the transaction that writes the text; removed with
    its message, conversation or user by the database's cascade (and, on SQLite, from the FTS5 table by
    a trigger), so deleting the source leaves no copy of its words here."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+")
    message = models.OneToOneField(Message, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    # The message's time (a title's: its conversation's), so results sort without a join.
    created_at = models.DateTimeField()
    terms = SearchTermsField()

    class Meta:
        verbose_name_plural = "search entries"
        indexes = [models.Index(fields=["user", "-created_at", "-id"], name="search_user_newest")]
        constraints = [
            models.UniqueConstraint(fields=["conversation"], condition=Q(message=None), name="search_one_title")
        ]

    def __str__(self) -> str:
        return f"Search entry of {'message ' + str(self.message_id) if self.message_id else 'a title'}"


class ProviderTicket(models.Model):
    """A request's place in a model provider's queue (chat.model_queue, LLM_MAX_CONCURRENCY): waiting
    (`granted_at` null) or sending. A lease: `expires_at` is renewed while its process waits or reads the
    reply, and a ticket whose process is gone (`owner`, as chat.process records it) or whose lease ran out
    is deleted by whoever looks next. Holds no words: which provider, how urgent, whose process."""

    class Priority(models.IntegerChoices):
        CHAT = 0, "chat"
        BACKGROUND = 1, "background"

    provider = models.CharField(max_length=32)  # a digest of the provider's base URL
    priority = models.PositiveSmallIntegerField(choices=Priority.choices)
    owner = models.CharField(max_length=255)
    created_at = models.DateTimeField()
    granted_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["provider", "priority", "id"], name="providerticket_queue")]

    def __str__(self) -> str:
        state = "sending" if self.granted_at else "waiting"
        return f"{self.get_priority_display()} request {state} ({self.owner})"
