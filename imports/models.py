"""An import: one upload of another product's export (or one paste of what an old assistant remembered),
what it found, how far its work got, and everything it brought, so that it can be removed whole.

The conversations it created are linked here (`ImportedConversation`), the projects it created too
(`ImportedProject`); what was learned from them is found through the memories' sources (their messages).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class ChatImport(models.Model):
    class Source(models.TextChoices):
        CHATGPT = "chatgpt", "ChatGPT"
        CLAUDE = "claude", "Claude"

    class Kind(models.TextChoices):
        EXPORT = "export", _("Chat export")
        PASTE = "paste", _("Pasted memories")

    class Status(models.TextChoices):
        PREVIEWED = "previewed", _("Previewed")
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        FAILED = "failed", _("Failed")

    class LearnStatus(models.TextChoices):
        NONE = "", _("Not started")
        QUEUED = "queued", _("Queued")
        RUNNING = "running", _("Running")
        DONE = "done", _("Done")
        STOPPED = "stopped", _("Stopped")
        FAILED = "failed", _("Failed")

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_imports")
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.EXPORT)
    source = models.CharField(max_length=16, choices=Source.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PREVIEWED)
    filename = models.CharField(max_length=255, blank=True)
    size = models.BigIntegerField(default=0)
    # The uploaded file while its work waits or runs (under IMPORT_DIR); "" once it is gone.
    stored_file = models.CharField(max_length=500, blank=True, editable=False)
    # What the check found before anything was written (imports.preview.Preview.as_dict).
    preview = models.JSONField(default=dict, blank=True)
    conversations = models.PositiveIntegerField(default=0)
    messages = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    progress = models.FloatField(default=0.0)
    # Conversations skipped on the way, each with its reason: [{"id", "title", "reason"}].
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # "Learn from imported chats": the judge's pass over the imported user messages, oldest first.
    learn_status = models.CharField(max_length=16, choices=LearnStatus.choices, blank=True, default="")
    learn_total = models.PositiveIntegerField(default=0)
    learn_done = models.PositiveIntegerField(default=0)
    learn_suggested = models.PositiveIntegerField(default=0)
    # The last message judged (its time and id): the next batch starts after it.
    learn_cursor = models.JSONField(null=True, blank=True)
    learn_stop = models.BooleanField(default=False)
    learn_error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="import_owner_newest")]

    def __str__(self) -> str:
        return f"Import {self.pk} ({self.source}, {self.status})"

    @property
    def learn_progress(self) -> float:
        return min(1.0, self.learn_done / self.learn_total) if self.learn_total else 0.0


class ImportedConversation(models.Model):
    chat_import = models.ForeignKey(ChatImport, on_delete=models.CASCADE, related_name="items")
    conversation = models.OneToOneField("chat.Conversation", on_delete=models.CASCADE, related_name="+")

    def __str__(self) -> str:
        return f"import {self.chat_import_id} → conversation {self.conversation_id}"


class ImportedProject(models.Model):
    """A project an import created for the export's own project (`key`: ChatGPT's conversation_template_id,
    Claude's project uuid). A later import of the same export puts its chats in the same project; removing
    the import deletes the project when nothing else is in it."""

    chat_import = models.ForeignKey(ChatImport, on_delete=models.CASCADE, related_name="projects")
    project = models.OneToOneField("chat.Project", on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=16, choices=ChatImport.Source.choices)
    key = models.CharField(max_length=200)

    def __str__(self) -> str:
        return f"import {self.chat_import_id} → project {self.project_id} ({self.source} {self.key})"
