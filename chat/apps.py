from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = _("Chat")

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out

        from accounts import data
        from accounts.layout import register_layout_context
        from accounts.scopes import register_project_lister, register_route_scope
        from accounts.signals import password_changed
        from chat import data as chat_data
        from chat import extensions
        from chat.selectors import project_choices
        from chat.sessions import on_logged_out, on_password_changed
        from chat.tasks import on_turn_finished
        from chat.views import layout_sidebar

        # Long conversations: summarize the agent state in the background after a turn (chat.turn.compaction).
        extensions.turn_finished.connect(on_turn_finished, dispatch_uid="chat.compaction.on_turn_finished")
        user_logged_out.connect(on_logged_out, dispatch_uid="chat.close_sockets_on_logout")
        password_changed.connect(on_password_changed, dispatch_uid="chat.close_sockets_on_password_change")
        # An account's conversations, for its export and deletion (accounts.data, SPEC §8).
        data.register_exporter("projects", chat_data.projects_export)
        data.register_exporter("conversations", chat_data.conversations_export)
        data.register_eraser("chat", chat_data.account_erase)
        data.register_page_context("chat", chat_data.account_page_context)
        extensions.register_conversation_eraser("tool-results", chat_data.tool_results_erase)
        # Settings pages of accounts (API tokens) are drawn in the chat's layout, with its sidebar.
        register_layout_context(layout_sidebar)
        # A token needs the `chat` scope for conversations and search (SPEC §9).
        register_route_scope("/api/conversations", read="chat", write="chat")
        register_route_scope("/api/search", read="chat", write="chat")
        # A token may be limited to one of the user's projects (accounts.scopes).
        register_project_lister("chat", project_choices)
