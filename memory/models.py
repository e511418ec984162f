"""Long-term memory: one sentence per fact about one user, with history, provenance and an audit trail.

A memory row's content never changes. An update invalidates the old row (`invalid_at`, a reason,
`superseded_by`) and inserts a new one, so the history of what was believed, and why it changed, is
kept. There is no conversation field: every conversation of the same scope sees the same active
memories (the user's own, and a project's in that project's conversations; memory.scopes).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _

from accounts.models import User

CONTENT_MAX = 500


class MemoryKey(models.TextChoices):
    """Single-valued preferences: at most one active memory per user and key (SPEC §8)."""

    REPLY_LANGUAGE = "reply_language", _("Reply language")
    FORM_OF_ADDRESS = "form_of_address", _("Form of address")
    UNITS = "units", _("Units")
    ANSWER_LENGTH = "answer_length", _("Answer length")
    TONE = "tone", _("Tone")
    TIMEZONE = "timezone", _("Time zone")
    HOME_CITY = "home_city", _("Home city")
    DIET = "diet", _("Diet")


class Memory(models.Model):
    class Origin(models.TextChoices):
        EXTRACTED = "extracted", _("Extracted from messages")
        USER = "user", _("Added by the user")
        RESTORED = "restored", _("Restored by the user")
        CLIENT = "client", _("Proposed by a connected tool")
        IMPORTED = "imported", _("Learned from imported chats")
        MERGED = "merged", _("Merged in a tidy-up")

    class InvalidReason(models.TextChoices):
        UPDATED = "updated", _("Updated from a later message")
        RETRACTED = "retracted", _("Retracted at the user's request")
        CLEARED = "cleared", _("Cleared (forget everything)")
        EDITED = "edited", _("Edited by the user")
        REPLACED = "replaced", _("Replaced by a restored version")
        EXPIRED = "expired", _("Expired (its end date passed)")
        MOVED = "moved", _("Moved to another scope")
        SOURCE_EDITED = "source_edited", _("Its source message was edited")
        MERGED = "merged", _("Merged into one memory (tidy-up)")
        SUPERSEDED = "superseded", _("Superseded by a newer memory (tidy-up)")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memories")
    content = models.CharField(max_length=CONTENT_MAX)
    origin = models.CharField(max_length=16, choices=Origin.choices, default=Origin.EXTRACTED)
    created_at = models.DateTimeField(auto_now_add=True)
    # Null while the memory is active.
    invalid_at = models.DateTimeField(null=True, blank=True)
    invalid_reason = models.CharField(max_length=16, choices=InvalidReason.choices, blank=True)
    # The newer version that replaced this one; `supersedes` is the reverse (the older version).
    superseded_by = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="supersedes"
    )
    # The run that wrote this row, when it was extracted.
    run = models.ForeignKey("ExtractionRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="memories")
    sources = models.ManyToManyField("chat.Message", through="MemorySource", related_name="memories", blank=True)
    # A learned memory waiting for the user's Keep or Discard: never in the block, never "active".
    suggested = models.BooleanField(default=False)
    # Health, finances, identity documents, beliefs, precise whereabouts (marked by the judge or the lexicon).
    sensitive = models.BooleanField(default=False)
    # In every turn's block, whatever the message is about.
    pinned = models.BooleanField(default=False)
    # A single-valued preference this memory holds (MemoryKey), or "".
    key = models.CharField(max_length=32, choices=MemoryKey.choices, blank=True, default="")
    # End of a time-bound fact: out of the block from then on, moved to history by the sweep.
    expires_at = models.DateTimeField(null=True, blank=True)
    # The last turn whose memory block held it, or the last read by a connected tool (MemoryRead).
    last_used_at = models.DateTimeField(null=True, blank=True)
    # Its scope (SPEC §9): null = about the user, in every conversation outside an isolated project; else
    # one piece of work's, only in that project's conversations. RESTRICT: a project ends through
    # chat.projects, whose memory handler moves or permanently deletes these first (never a silent cascade).
    project = models.ForeignKey(
        "chat.Project", null=True, blank=True, on_delete=models.RESTRICT, related_name="memories"
    )
    # The connected tool that proposed it (origin "client"): its MCP clientInfo name or User-Agent.
    client = models.CharField(max_length=100, blank=True, default="")
    # The memories an accepted tidy-up merge made this one from (memory.consolidation), oldest first.
    merged_from = models.JSONField(default=list, blank=True)

    class Meta:
        verbose_name_plural = _("memories")
        ordering = ["created_at", "id"]
        indexes = [
            # "This user's active memories, oldest first": the memory block of every turn.
            models.Index(
                fields=["owner", "created_at", "id"], name="memory_owner_active", condition=Q(invalid_at=None)
            ),
            models.Index(fields=["owner", "-invalid_at"], name="memory_owner_history"),
        ]
        # Two constraints each, per scope: a null project never equals another in a unique index.
        constraints = [
            # One active memory per content and scope: concurrent identical adds cannot both land.
            models.UniqueConstraint(
                fields=["owner", "content"],
                condition=Q(invalid_at=None, project=None),
                name="memory_active_content_unique",
            ),
            models.UniqueConstraint(
                fields=["project", "content"],
                condition=Q(invalid_at=None, project__isnull=False),
                name="memory_project_content_unique",
            ),
            # One active value per single-valued preference and scope; suggestions wait beside it.
            models.UniqueConstraint(
                fields=["owner", "key"],
                condition=Q(invalid_at=None, suggested=False, project=None) & ~Q(key=""),
                name="memory_active_key_unique",
            ),
            models.UniqueConstraint(
                fields=["project", "key"],
                condition=Q(invalid_at=None, suggested=False, project__isnull=False) & ~Q(key=""),
                name="memory_project_key_unique",
            ),
        ]

    def __str__(self) -> str:
        return self.content[:80]

    @property
    def is_active(self) -> bool:
        return self.invalid_at is None


class MemorySource(models.Model):
    """A user message a memory was drawn from."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="source_links")
    message = models.ForeignKey("chat.Message", on_delete=models.CASCADE, related_name="memory_links")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["memory", "message"], name="memory_source_unique")]

    def __str__(self) -> str:
        return f"memory {self.memory_id} ← message {self.message_id}"


class MemoryUse(models.Model):
    """A memory a reply's memory block held (SPEC §8 "Recall"): shown under the reply as "Used N
    memories", and gone with the memory or the message."""

    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="uses")
    message = models.ForeignKey("chat.Message", on_delete=models.CASCADE, related_name="memory_uses")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["message", "memory"], name="memory_use_unique")]

    def __str__(self) -> str:
        return f"message {self.message_id} used memory {self.memory_id}"


class ReplayWithheld(models.Model):
    """A message of the user's that quoted or taught a memory deleted since (memory/replay.py): it stays on
    the page, but `search_history` no longer hands it to the model. It holds no text, only which message."""

    message = models.OneToOneField("chat.Message", on_delete=models.CASCADE, related_name="replay_withheld")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"message {self.message_id} withheld from the model"


class MemoryAccess(models.Model):
    """One request of a connected tool that read memories through a personal token (SPEC §9): an MCP
    tool call or a `/v1` chat completion. Settings → Memory and the tokens list show them ("Cursor read
    3 memories at 14:02"); no text is kept here, only which memories were read."""

    class Kind(models.TextChoices):
        MCP = "mcp", _("MCP")
        V1 = "v1", _("OpenAI-compatible endpoint")

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # Null once the token is revoked; its label stays so the log still says which one it was.
    token = models.ForeignKey("accounts.ApiToken", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    token_label = models.CharField(max_length=100, blank=True)
    client = models.CharField(max_length=100, blank=True)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    at = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["user", "-at"], name="memory_access_user_at"),
            models.Index(fields=["token", "-at"], name="memory_access_token_at"),
        ]

    def __str__(self) -> str:
        return f"{self.client or '?'} read {self.count} at {self.at:%Y-%m-%d %H:%M}"

    @property
    def memories(self) -> int:
        """How many memories it read (as the tokens list names it, accounts/_token_read.html)."""
        return self.count


class MemoryRead(models.Model):
    """A memory one access read; gone with the memory or the access."""

    access = models.ForeignKey(MemoryAccess, on_delete=models.CASCADE, related_name="reads")
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="reads")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["access", "memory"], name="memory_read_unique")]

    def __str__(self) -> str:
        return f"access {self.access_id} read memory {self.memory_id}"


class MemoryVector(models.Model):
    """A memory's embedding (EMBEDDING_MODEL), made when the memory is written: normalised float32 values,
    packed. A row's content never changes, so neither does its vector (but for another model's)."""

    memory = models.OneToOneField(Memory, on_delete=models.CASCADE, primary_key=True, related_name="vector")
    model = models.CharField(max_length=200)
    vector = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"vector of memory {self.memory_id} ({self.model})"


class ExtractionRun(models.Model):
    """One attempt of the pipeline for one user and one batch of their messages (SPEC §4)."""

    class Trigger(models.TextChoices):
        BACKGROUND = "background", _("Background (after a turn)")
        FLUSH = "flush", _("flush_memory tool")
        MANUAL = "manual", _("Admin or command line")
        IMPORT = "import", _("Learning from imported chats")

    class Status(models.TextChoices):
        RUNNING = "running", _("Running")
        APPLIED = "applied", _("Applied")
        FAILED = "failed", _("Failed (messages stay pending)")
        DROPPED = "dropped", _("Dropped (batch skipped after repeated failures)")
        ABANDONED = "abandoned", _("Abandoned (claim lost or the user changed memories meanwhile)")
        SPLIT = "split", _("Split (too large for the model; retried as smaller batches)")
        TOO_LARGE = "too_large", _("Too large for the model (messages stay pending)")
        UNAVAILABLE = "unavailable", _("Model server unavailable (messages stay pending; retried later)")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="extraction_runs")
    trigger = models.CharField(max_length=16, choices=Trigger.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    # The exact user messages this run covers: only these are marked processed (or skipped).
    message_ids = models.JSONField(default=list)
    # The oldest message of the batch; consecutive failures on the same one count as attempts.
    first_message_id = models.BigIntegerField(null=True, blank=True)
    trigger_message_id = models.BigIntegerField(null=True, blank=True)
    attempt = models.PositiveSmallIntegerField(default=1)
    model = models.CharField(max_length=200, blank=True)
    judge_input = models.JSONField(default=list, blank=True)
    raw_output = models.TextField(blank=True)
    applied_ops = models.JSONField(default=list, blank=True)
    dropped_ops = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    judge_ms = models.PositiveIntegerField(null=True, blank=True)
    # When the retention sweep removed the run's text (MEMORY_RUN_RETENTION_DAYS): judge input, raw
    # output, the operations' content and error details; counts, status and timings stay.
    text_removed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "-started_at"], name="run_owner_started"),
            models.Index(fields=["owner", "first_message_id", "status"], name="run_owner_batch"),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.trigger}, {self.status})"

    @property
    def duration_ms(self) -> int | None:
        if self.finished_at is None:
            return None
        return int((self.finished_at - self.started_at).total_seconds() * 1000)


class MemoryClaim(models.Model):
    """The per-user extraction claim: at most one run per user at a time.

    Taken and released with conditional UPDATEs (or an INSERT guarded by the primary key), which is
    safe on both SQLite and PostgreSQL. A claim whose holder crashed expires at `expires_at`.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, primary_key=True, related_name="+")
    token = models.UUIDField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    run = models.ForeignKey(ExtractionRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    # The process holding it ("host:pid:boot"), so a claim of a worker that died is released at once
    # by the extraction sweep (memory/extraction/recovery.py) instead of when it expires.
    owner = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return f"Extraction claim of user {self.user_id}"


class ConsolidationPass(models.Model):
    """One tidy-up pass over a user's memories (memory.consolidation): what it cost and found."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    clusters = models.PositiveIntegerField(default=0)
    judge_calls = models.PositiveIntegerField(default=0)
    # Characters sent to the judge and received from it, all clusters together.
    chars = models.PositiveIntegerField(default=0)
    proposals = models.PositiveIntegerField(default=0)
    failed_clusters = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"Tidy-up pass {self.pk} of user {self.owner_id}"


class ConsolidationProposal(models.Model):
    """A change the consolidation judge proposes; nothing changes until the user accepts it (SPEC §9)."""

    class Op(models.TextChoices):
        MERGE = "merge", _("Merge")
        SUPERSEDE = "supersede", _("Supersede")
        EXPIRE = "expire", _("Expire")

    class Status(models.TextChoices):
        PENDING = "pending", _("Waiting for review")
        ACCEPTED = "accepted", _("Accepted")
        REJECTED = "rejected", _("Rejected")
        UNDONE = "undone", _("Undone")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey("chat.Project", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    op = models.CharField(max_length=16, choices=Op.choices)
    # The memories it is about, oldest first (a supersede: [old, new]; an expire: [one]).
    member_ids = models.JSONField(default=list)
    content = models.CharField(max_length=CONTENT_MAX, blank=True)  # a merge's sentence
    by_id = models.BigIntegerField(null=True, blank=True)  # a supersede's newer memory
    expires_at = models.DateTimeField(null=True, blank=True)  # an expire's end date
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    # Op and member set: a set proposed once (and rejected, say) is never proposed again.
    fingerprint = models.CharField(max_length=64)
    # What Undo needs that the rows do not keep (an expire's previous end date).
    undo = models.JSONField(default=dict, blank=True)
    # The memory an accepted merge created.
    result = models.ForeignKey(Memory, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["owner", "fingerprint"], name="consolidation_fingerprint_unique")
        ]

    def __str__(self) -> str:
        return f"{self.op} {self.member_ids} ({self.status})"


class MemoryUser(User):
    """Users as seen from the memory admin (pending messages, active memories, "extract now")."""

    class Meta:
        proxy = True
        verbose_name = _("user memory")
        verbose_name_plural = _("user memories")
