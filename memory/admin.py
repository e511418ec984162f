from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from chat.admin import ErasingDeleteMixin
from chat.models import Message
from memory import selectors, services
from memory.extraction.run import dropped_batch_retry
from memory.models import ExtractionRun, Memory, MemorySource, MemoryUser
from memory.tasks import enqueue_for_message


class ActiveFilter(admin.SimpleListFilter):
    title = _("state")
    parameter_name = "state"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("active", str(_("Active"))), ("invalid", str(_("Invalidated")))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Memory]) -> QuerySet[Memory]:
        if self.value() == "active":
            return queryset.filter(invalid_at__isnull=True)
        if self.value() == "invalid":
            return queryset.filter(invalid_at__isnull=False)
        return queryset


class MemorySourceInline(admin.TabularInline):
    model = MemorySource
    fields = ("message", "excerpt")
    readonly_fields = fields
    extra = 0
    can_delete = False
    verbose_name = _("source message")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("Excerpt"))
    def excerpt(self, obj: MemorySource) -> str:
        return obj.message.content[:200]


def _memory_link(memory: Memory) -> str:
    url = reverse("admin:memory_memory_change", args=[memory.pk])
    state = "active" if memory.invalid_at is None else f"{memory.get_invalid_reason_display() or 'invalid'}"
    return format_html('<a href="{}">#{}</a> {} <em>({})</em>', url, memory.pk, memory.content, state)


@admin.register(Memory)
class MemoryAdmin(ErasingDeleteMixin, admin.ModelAdmin):
    list_display = ("id", "owner", "content", "origin", "is_active", "invalid_reason", "created_at", "invalid_at")
    list_filter = (
        ActiveFilter,
        "suggested",
        "sensitive",
        "pinned",
        "key",
        "origin",
        "invalid_reason",
        ("owner", admin.RelatedOnlyFieldListFilter),
        ("project", admin.RelatedOnlyFieldListFilter),
    )
    search_fields = ("content", "owner__username")
    list_select_related = ("owner",)
    fields = (
        "owner",
        "content",
        "origin",
        "suggested",
        "sensitive",
        "pinned",
        "key",
        "project",
        "expires_at",
        "last_used_at",
        "created_at",
        "invalid_at",
        "invalid_reason",
        "run",
        "version_chain",
    )
    readonly_fields = fields
    inlines = [MemorySourceInline]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # memories are written by the pipeline or by their owner, never in admin

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    erased_label = "memory"

    # A permanent delete, as the owner's: every copy of the sentence goes too (memory.forgetting).
    def erase(self, ids: list[Any]) -> None:
        services.memory_rows_delete(memory_ids=ids)

    @admin.display(boolean=True, description=_("Active"))
    def is_active(self, obj: Memory) -> bool:
        return obj.invalid_at is None

    @admin.display(description=_("Versions (oldest first)"))
    def version_chain(self, obj: Memory) -> str:
        chain = [obj]
        while (older := Memory.objects.filter(superseded_by=chain[0]).first()) is not None and len(chain) < 50:
            chain.insert(0, older)
        while chain[-1].superseded_by_id is not None and len(chain) < 100:
            chain.append(Memory.objects.get(pk=chain[-1].superseded_by_id))
        return format_html_join("", "<div>{}</div>", ((_memory_link(m),) for m in chain))


def _pretty(value: Any) -> str:
    return format_html("<pre style='white-space: pre-wrap'>{}</pre>", json.dumps(value, ensure_ascii=False, indent=2))


OWNER_CHARS = 20


@admin.register(ExtractionRun)
class ExtractionRunAdmin(admin.ModelAdmin):
    # Compact columns, so the list fits 1280 px beside the filters with start and duration in view.
    list_display = ("id", "started", "duration", "owner_name", "trigger", "short_status", "outcome")
    list_display_links = ("id", "started")
    list_filter = ("status", "trigger", ("owner", admin.RelatedOnlyFieldListFilter))
    search_fields = ("owner__username", "raw_output", "error")
    list_select_related = ("owner",)
    fields = (
        "owner",
        "trigger",
        "status",
        "attempt",
        "model",
        "message_ids",
        "trigger_message_id",
        "started_at",
        "finished_at",
        "judge_ms",
        "text_removed",
        "error",
        "judge_input_pretty",
        "raw_output",
        "applied_pretty",
        "dropped_pretty",
    )
    readonly_fields = fields
    actions = ["retry_dropped_batches"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.action(description=_("Retry the selected dropped batches (their skipped messages become pending)"))
    def retry_dropped_batches(self, request: HttpRequest, queryset: QuerySet[ExtractionRun]) -> None:
        retried = 0
        for run_id in queryset.filter(status=ExtractionRun.Status.DROPPED).values_list("id", flat=True):
            outcome = dropped_batch_retry(run_id=run_id)
            if outcome is None:
                continue
            user_id, last_message_id, count = outcome
            enqueue_for_message(user_id=user_id, message_id=last_message_id, trigger=ExtractionRun.Trigger.MANUAL)
            retried += count
        text = ngettext(
            "%(count)d message is pending again; extraction scheduled.",
            "%(count)d messages are pending again; extraction scheduled.",
            retried,
        )
        self.message_user(request, text % {"count": retried}, messages.SUCCESS)

    @admin.display(description=_("Text"))
    def text_removed(self, obj: ExtractionRun) -> str:
        if obj.text_removed_at is None:
            return str(_("kept"))
        when = timezone.localtime(obj.text_removed_at).strftime("%Y-%m-%d %H:%M")
        return str(
            _("removed by retention on %(when)s (MEMORY_RUN_RETENTION_DAYS); counts, status and timings kept")
        ) % {"when": when}

    @admin.display(description=_("Started"), ordering="started_at")
    def started(self, obj: ExtractionRun) -> str:
        return timezone.localtime(obj.started_at).strftime("%Y-%m-%d %H:%M:%S")

    @admin.display(description=_("Duration"))
    def duration(self, obj: ExtractionRun) -> str:
        ms = obj.duration_ms
        if ms is None:
            return str(_("running")) if obj.status == ExtractionRun.Status.RUNNING else "–"
        return f"{ms} ms" if ms < 1000 else f"{ms / 1000:.1f} s"

    @admin.display(description=_("Status"), ordering="status")
    def short_status(self, obj: ExtractionRun) -> str:
        # The one word; the full explanation ("Dropped (batch skipped after ...)") on hover and on the run's page.
        return format_html('<span title="{}">{}</span>', obj.get_status_display(), obj.status.capitalize())

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> Any:
        # The list needs the width the admin's navigation sidebar would take (its links are on the home page).
        return super().changelist_view(request, {**(extra_context or {}), "is_nav_sidebar_enabled": False})

    @admin.display(description=_("Owner"), ordering="owner__username")
    def owner_name(self, obj: ExtractionRun) -> str:
        # A long username is shortened (whole on hover and on the run's page), so the columns keep their room.
        name = obj.owner.get_username()
        short = name if len(name) <= OWNER_CHARS else name[: OWNER_CHARS - 1] + "…"
        return format_html('<span title="{}">{}</span>', name, short)

    @admin.display(description=_("Msgs · applied · dropped"))
    def outcome(self, obj: ExtractionRun) -> str:
        counts = f"{len(obj.message_ids or [])} · {len(obj.applied_ops or [])} · {len(obj.dropped_ops or [])}"
        return f"{counts} (#{obj.attempt})" if obj.attempt > 1 else counts

    @admin.display(description=_("Judge input"))
    def judge_input_pretty(self, obj: ExtractionRun) -> str:
        return format_html_join(
            "",
            "<p><strong>{}</strong></p><pre style='white-space: pre-wrap'>{}</pre>",
            ((m.get("role", ""), m.get("content", "")) for m in obj.judge_input or []),
        )

    @admin.display(description=_("Applied operations"))
    def applied_pretty(self, obj: ExtractionRun) -> str:
        return _pretty(obj.applied_ops)

    @admin.display(description=_("Dropped operations (with reasons)"))
    def dropped_pretty(self, obj: ExtractionRun) -> str:
        return _pretty(obj.dropped_ops)


@admin.register(MemoryUser)
class MemoryUserAdmin(admin.ModelAdmin):
    list_display = ("username", "memory_enabled", "pending_messages", "active_memories")
    list_filter = ("memory_enabled",)
    search_fields = ("username", "email")
    fields = ("username", "memory_enabled")
    readonly_fields = fields
    actions = ["run_extraction_now"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[MemoryUser]:
        pending = Q(chat_messages__in=selectors.messages_pending_all_users())
        return (
            super()
            .get_queryset(request)
            .annotate(
                pending_count=Count("chat_messages", filter=pending, distinct=True),
                active_count=Count("memories", filter=Q(memories__invalid_at__isnull=True), distinct=True),
            )
        )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description=_("Pending messages"), ordering="pending_count")
    def pending_messages(self, obj: Any) -> int:
        return int(obj.pending_count)

    @admin.display(description=_("Active memories"), ordering="active_count")
    def active_memories(self, obj: Any) -> int:
        return int(obj.active_count)

    @admin.action(description=_("Run memory extraction now"))
    def run_extraction_now(self, request: HttpRequest, queryset: QuerySet[MemoryUser]) -> None:
        scheduled = 0
        for user in queryset.filter(memory_enabled=True):
            last = (
                Message.objects.filter(user=user, role=Message.Role.USER)
                .order_by("-id")
                .values_list("id", flat=True)
                .first()
            )
            if last is not None:
                enqueue_for_message(user_id=user.pk, message_id=last, trigger=ExtractionRun.Trigger.MANUAL)
                scheduled += 1
        text = ngettext(
            "Extraction scheduled for %(count)d user.", "Extraction scheduled for %(count)d users.", scheduled
        )
        self.message_user(request, text % {"count": scheduled}, messages.SUCCESS)
