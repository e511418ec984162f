from typing import Any

from django.contrib import admin
from django.contrib.admin.models import DELETION, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from chat import services
from chat.models import AgentState, Conversation, Message, Project
from chat.search.index import search_index_title
from chat.turn import context_budget


class ErasingDeleteMixin:
    """An admin whose deletes are the owner's own: `erase(ids)` removes the rows with every copy of their
    text kept elsewhere. The admin's log would name each deleted object by its `str()` (a message's words,
    a conversation's title, a memory's sentence); it names them by `erased_label` and id only, so the log
    keeps no copy of them (SPEC §8)."""

    erased_label = ""

    def erase(self, ids: list[Any]) -> None:
        raise NotImplementedError

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.erase([obj.pk])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self.erase(list(queryset.values_list("pk", flat=True)))

    def log_deletions(self, request: HttpRequest, queryset: QuerySet[Any]) -> list[LogEntry]:
        return [
            LogEntry.objects.create(
                user_id=int(request.user.pk or 0),
                content_type_id=ContentType.objects.get_for_model(obj).pk,
                object_id=str(obj.pk),
                object_repr=f"{self.erased_label} {obj.pk}",
                action_flag=DELETION,
            )
            for obj in queryset
        ]


class StateSizeMixin:
    @admin.display(description=_("state size"))
    def state_size(self, state: AgentState) -> str:
        """Items and estimated tokens of the agent state (chat.llm.tokens)."""
        return _("%(items)d items, ~%(tokens)s tokens") % {
            "items": len(state.context),
            "tokens": f"{context_budget.state_tokens(state):,}",
        }


class MessageInline(admin.TabularInline):
    model = Message
    fields = ("created_at", "role", "status", "memory_status", "content")
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request: object, obj: object = None) -> bool:
        return False


class AgentStateInline(StateSizeMixin, admin.StackedInline):
    model = AgentState
    fields = ("version", "updated_at", "state_size", "compactions", "summarized_through", "context")
    readonly_fields = fields
    can_delete = False

    def has_add_permission(self, request: object, obj: object = None) -> bool:
        return False


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    """Read only: a project is its owner's; ending one goes through its page or the API (chat.projects)."""

    list_display = ("name", "owner", "memory_mode", "created_at")
    list_filter = ("memory_mode",)
    search_fields = ("name", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = ("owner", "name", "instructions", "memory_mode", "created_at", "updated_at")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Project | None = None) -> bool:
        return False  # the owner chooses what becomes of its memories and conversations


@admin.register(Conversation)
class ConversationAdmin(ErasingDeleteMixin, admin.ModelAdmin):
    list_display = ("display_title", "owner", "project", "temporary", "created_at", "updated_at")
    list_filter = ("temporary", "created_at")
    search_fields = ("title", "owner__username", "id")
    list_select_related = ("owner",)
    readonly_fields = ("id", "owner", "created_at", "updated_at", "lock_token", "lock_expires_at")
    inlines = [AgentStateInline, MessageInline]

    def has_add_permission(self, request: HttpRequest) -> bool:  # conversations belong to a user's chat
        return False

    erased_label = "conversation"

    # Deleted the way the user's own delete does it: with every copy of its messages kept elsewhere.
    def erase(self, ids: list[Any]) -> None:
        for conversation in Conversation.objects.filter(pk__in=ids):
            services.conversation_delete(conversation=conversation)

    def save_model(self, request: HttpRequest, obj: Conversation, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if "title" in form.changed_data:  # search finds the title as it now reads (chat.search)
            search_index_title(conversation=obj)


@admin.register(Message)
class MessageAdmin(ErasingDeleteMixin, admin.ModelAdmin):
    list_display = ("id", "user", "role", "status", "memory_status", "created_at")
    list_filter = ("role", "status", "memory_status")
    search_fields = ("content", "user__username")
    list_select_related = ("user",)
    readonly_fields = (
        "conversation",
        "user",
        "role",
        "content",
        "status",
        "error",
        "memory_status",
        "created_at",
        "updated_at",
    )

    def has_add_permission(self, request: object) -> bool:  # messages are written by chat turns only
        return False

    erased_label = "message"

    def erase(self, ids: list[Any]) -> None:
        services.messages_delete(message_ids=ids)


@admin.register(AgentState)
class AgentStateAdmin(StateSizeMixin, admin.ModelAdmin):
    list_display = ("conversation", "version", "state_size", "compactions", "updated_at")
    readonly_fields = (
        "conversation",
        "state_size",
        "compactions",
        "summarized_through",
        "token_ratio",
        "context_window",
        "context",
        "version",
        "updated_at",
    )
    list_select_related = ("conversation",)

    def has_add_permission(self, request: object) -> bool:  # one state per conversation, made with it
        return False
