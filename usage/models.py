"""What provider calls consumed, aggregated per day (SPEC §9 "Usage"), with prices and quotas.

A row per (user, project, model, kind, day): a year of heavy use is a few thousand rows per user.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

NO_PROJECT = 0  # `project_key` of calls outside any project: a plain key, so the unique row holds without NULLs


class Kind(models.TextChoices):
    CHAT = "chat", _("Chat replies")
    MEMORY_BLOCK = "memory_block", _("Memory in replies")
    JUDGE = "judge", _("Memory judge")
    SUMMARY = "summary", _("Summaries")
    EMBEDDING = "embedding", _("Embeddings")
    CONSOLIDATION = "consolidation", _("Memory consolidation")
    API = "api", _("API requests")


class DailyUsage(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="daily_usage")
    # The project's id when the call was made (0: none). Not a foreign key: a deleted project's costs stay.
    project_key = models.PositiveBigIntegerField(default=NO_PROJECT)
    model = models.CharField(max_length=200)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    day = models.DateField()
    calls = models.PositiveIntegerField(default=0)
    prompt_tokens = models.PositiveBigIntegerField(default=0)
    completion_tokens = models.PositiveBigIntegerField(default=0)
    # The part of the counts above that is our calibrated estimate, not the provider's report.
    estimated_tokens = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "day", "kind", "model", "project_key"], name="usage_daily_row")
        ]
        indexes = [models.Index(fields=["day"], name="usage_daily_day")]
        verbose_name = _("daily usage")
        verbose_name_plural = _("daily usage")

    def __str__(self) -> str:
        return f"{self.user_id} {self.day} {self.kind} {self.model}"

    @property
    def project_id(self) -> int | None:
        return self.project_key or None


class ModelPrice(models.Model):
    """An admin's price for a model; wins over MODEL_PRICES. Per million tokens, in PRICE_CURRENCY."""

    model = models.CharField(_("model"), max_length=200, unique=True)
    input = models.DecimalField(_("input price per million tokens"), max_digits=12, decimal_places=4)
    output = models.DecimalField(_("output price per million tokens"), max_digits=12, decimal_places=4)

    class Meta:
        verbose_name = _("model price")
        verbose_name_plural = _("model prices")

    def __str__(self) -> str:
        return self.model


class UserQuota(models.Model):
    """An admin's monthly token quota for one user; wins over USER_MONTHLY_TOKENS. Empty: unlimited."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="usage_quota")
    monthly_tokens = models.PositiveBigIntegerField(_("monthly tokens"), null=True, blank=True)

    class Meta:
        verbose_name = _("token quota")
        verbose_name_plural = _("token quotas")

    def __str__(self) -> str:
        return str(self.user)


class ReplyMemoryTokens(models.Model):
    """The memory block's tokens in one reply's prompts ("memory: N tokens" under the reply)."""

    message = models.OneToOneField("chat.Message", on_delete=models.CASCADE, primary_key=True, related_name="+")
    tokens = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.message_id}: {self.tokens}"
