from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = _("Memory")

    def ready(self) -> None:
        """Plug memory into chat's extension points (chat works on its own without them)."""
        from chat import extensions
        from memory import demo
        from memory.context import memory_block
        from memory.notices import conversation_page_block, mark_conversation, on_memories_changed
        from memory.receivers import on_turn_finished
        from memory.signals import memories_changed
        from memory.tools import flush_memory

        extensions.register_context_provider("memory", memory_block)
        extensions.register_tool(flush_memory)
        extensions.register_page_block("conversation", "memory-notices", conversation_page_block)
        # Links to Settings → Memory, and what the chat pages say about memory (memory/chat/).
        slots = ("header", "user-menu", "start-lead", "empty-conversation", "noscript", "delete-note", "delete-confirm")
        for slot in slots:
            extensions.register_page_block(slot, "memory", f"memory/chat/_{slot.replace('-', '_')}.html")
        extensions.turn_finished.connect(on_turn_finished, dispatch_uid="memory.on_turn_finished")
        memories_changed.connect(on_memories_changed, dispatch_uid="memory.on_memories_changed")
        memories_changed.connect(mark_conversation, dispatch_uid="memory.mark_conversation")
        extensions.register_demo_json_responder("memory-judge", demo.demo_judge)
        extensions.register_demo_tool_trigger("memory-flush", demo.demo_tool_trigger)
        extensions.register_demo_result_wording("memory-flush", demo.demo_result_wording)
