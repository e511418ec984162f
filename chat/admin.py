from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

from chat import compaction
from chat.models import AgentState, Conversation, Message


class StateSizeMixin:
    @admin.display(description=_("state size"))
    def state_size(self, state: AgentState) -> str:
        """Items and estimated tokens of the agent state (chat.tokens)."""
        return _("%(items)d items, ~%(tokens)s tokens") % {
            "items": len(state.context),
            "tokens": f"{compaction.state_tokens(state):,}",
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


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    list_display = ("display_title", "owner", "temporary", "created_at", "updated_at")
    list_filter = ("temporary", "created_at")
    search_fields = ("title", "owner__username", "id")
    list_select_related = ("owner",)
    readonly_fields = ("id", "owner", "created_at", "updated_at", "lock_token", "lock_expires_at")
    inlines = [AgentStateInline, MessageInline]

    def has_add_permission(self, request: HttpRequest) -> bool:  # conversations belong to a user's chat
        return False


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
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
