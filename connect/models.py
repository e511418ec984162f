"""Where the OpenAI-compatible endpoint keeps what a client's requests said (SPEC §9).

A client sends the whole history with every request; its new user messages are saved in one
conversation per `X-Memora-Conversation` value (or per token and day), each once: a saved message is
remembered by a digest of the history up to it (`ClientMessage`), so the same history sent again
stores nothing new. No text is kept here; the messages are chat's own rows.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ClientConversation(models.Model):
    """The conversation a client's requests are saved in, by the key they name."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # The X-Memora-Conversation value, or "token:<id>:<YYYY-MM-DD>" without one.
    key = models.CharField(max_length=200)
    conversation = models.OneToOneField("chat.Conversation", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "key"], name="client_conversation_key_unique")]

    def __str__(self) -> str:
        return f"{self.key} → {self.conversation_id}"


class ClientMessage(models.Model):
    """A user message saved from a client's request, by the digest of the history up to and including it."""

    conversation = models.ForeignKey("chat.Conversation", on_delete=models.CASCADE, related_name="+")
    message = models.ForeignKey("chat.Message", on_delete=models.CASCADE, related_name="+")
    digest = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["conversation", "digest"], name="client_message_digest_unique")]

    def __str__(self) -> str:
        return f"{self.digest[:12]} → message {self.message_id}"
