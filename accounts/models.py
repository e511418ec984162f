from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class User(AbstractUser):
    # Off means: nothing is learned from this user's messages and no memory is used in their turns.
    memory_enabled = models.BooleanField(default=True)

    class MemoryReview(models.TextChoices):
        AUTO = "auto", _("Remember learned facts at once")
        SENSITIVE = "sensitive", _("Ask me before remembering sensitive facts")
        ALL = "all", _("Ask me before remembering any learned fact")

    # Which learned memories wait as suggestions for the user's Keep or Discard (SPEC §8).
    memory_review = models.CharField(max_length=16, choices=MemoryReview.choices, default=MemoryReview.SENSITIVE)
    # The interface language ("" follows the browser's Accept-Language); one of settings.LANGUAGES.
    language = models.CharField(max_length=16, blank=True, default="")

    def save(self, *args: Any, **kwargs: Any) -> None:
        # set_password() leaves the new password in _password until the next save.
        password_changed = self.pk is not None and getattr(self, "_password", None) is not None
        super().save(*args, **kwargs)
        if password_changed:
            from accounts.signals import password_changed as signal

            signal.send(sender=User, user=self)


class Scope(models.TextChoices):
    """What a personal token may do (SPEC §9). A token made without naming any has them all."""

    MEMORY_READ = "memory:read", _("Read memories")
    MEMORY_PROPOSE = "memory:propose", _("Propose memories (as suggestions)")
    MEMORY_WRITE = "memory:write", _("Save and forget memories")
    CHAT = "chat", _("Chat (the OpenAI-compatible endpoint and conversations)")


ALL_SCOPES = [scope.value for scope in Scope]


def all_scopes() -> list[str]:
    return list(ALL_SCOPES)


class ApiToken(models.Model):
    """A personal API token. Only a SHA-256 digest is stored; the token itself is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, help_text=_("First characters, to tell tokens apart."))
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # Null: never expires. An expired token authenticates nothing; it stays listed until revoked.
    expires_at = models.DateTimeField(null=True, blank=True)
    # A subset of Scope's values; tokens made before scopes existed have them all.
    scopes = models.JSONField(default=all_scopes)
    # The one project it is limited to (a chat.Project's id; null: none). Kept as a plain id, as accounts comes
    # before chat: the apps that serve tokens check it (accounts.scopes) and refuse a token whose project is gone.
    project_id = models.PositiveBigIntegerField(null=True, blank=True)
    # The name of the program that used it last (MCP clientInfo or User-Agent), for the tokens list.
    last_client = models.CharField(max_length=100, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"

    @property
    def has_full_access(self) -> bool:
        return set(ALL_SCOPES) <= set(self.scopes) and self.project_id is None

    def allows(self, scope: str) -> bool:
        return scope in self.scopes

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()
