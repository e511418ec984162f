from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = _("Chat")

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out

        from accounts.signals import password_changed
        from chat import extensions
        from chat.sessions import on_logged_out, on_password_changed
        from chat.tasks import on_turn_finished

        # Long conversations: summarize the agent state in the background after a turn (chat.compaction).
        extensions.turn_finished.connect(on_turn_finished, dispatch_uid="chat.compaction.on_turn_finished")
        user_logged_out.connect(on_logged_out, dispatch_uid="chat.close_sockets_on_logout")
        password_changed.connect(on_password_changed, dispatch_uid="chat.close_sockets_on_password_change")
