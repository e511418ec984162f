from django.apps import AppConfig


class ChatConfig(AppConfig):
    name = "chat"
    verbose_name = "Chat"

    def ready(self) -> None:
        from chat import extensions
        from chat.tasks import on_turn_finished

        # Long conversations: summarize the agent state in the background after a turn (chat.compaction).
        extensions.turn_finished.connect(on_turn_finished, dispatch_uid="chat.compaction.on_turn_finished")
