from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MemoryConfig(AppConfig):
    name = "memory"
    verbose_name = _("Memory")

    def ready(self) -> None:
        """Plug memory into chat's extension points (chat works on its own without them)."""
        from accounts import data, scopes
        from chat import extensions
        from memory import connected, embeddings, forgetting, moves, replay
        from memory import data as memory_data
        from memory.changes import MARKER_KIND
        from memory.chat_fragments import conversation_page_block, project_end_block, project_page_block
        from memory.consolidation import demo as consolidation_demo
        from memory.consolidation import services as consolidation_services
        from memory.consolidation import tasks as consolidation_tasks  # also registers its task with the worker
        from memory.context import memory_block, record_uses_on_save
        from memory.demo import judge as demo
        from memory.demo import wording as demo_wording
        from memory.edits import on_user_message_edited
        from memory.history import demo_tool_trigger as demo_search_trigger
        from memory.history import search_history
        from memory.notices import mark_conversation, marker_wording, on_memories_changed
        from memory.receivers import on_memories_written, on_turn_finished
        from memory.selectors import memory_uses_annotate
        from memory.signals import memories_changed
        from memory.tasks import register_sweep_step
        from memory.tools import flush_memory

        register_sweep_step("tidy-up", lambda now: consolidation_tasks.sweep_due(now=now))
        extensions.register_context_provider("memory", memory_block)
        extensions.register_turn_prefetch("memory-query-vector", embeddings.prefetch)
        extensions.register_tool(flush_memory)
        extensions.register_marker_renderer(MARKER_KIND, marker_wording)
        extensions.register_tool(search_history)
        extensions.register_page_block("conversation", "memory-notices", conversation_page_block)
        # A project's page shows its memories; ending one says how many it holds (SPEC §9).
        extensions.register_page_block("project", "memory", project_page_block)
        extensions.register_page_block("project-end", "memory", project_end_block)
        # What a reply used: `memories_used` in the API, "Used N memories" under the reply.
        extensions.register_message_annotator("memory-uses", memory_uses_annotate)
        extensions.turn_saving.connect(record_uses_on_save, dispatch_uid="memory.record_uses_on_save")
        extensions.register_page_block("reply", "memory-uses", "memory/chat/_reply.html")
        # Links to Settings → Memory, and what the chat pages say about memory (memory/chat/).
        slots = ("header", "user-menu", "start-lead", "empty-conversation", "noscript", "delete-note", "delete-confirm")
        for slot in slots:
            extensions.register_page_block(slot, "memory", f"memory/chat/_{slot.replace('-', '_')}.html")
        extensions.turn_finished.connect(on_turn_finished, dispatch_uid="memory.on_turn_finished")
        # An edited message: a memory drawn from it alone moves to History (memory.edits).
        extensions.user_message_edited.connect(on_user_message_edited, dispatch_uid="memory.on_user_message_edited")
        memories_changed.connect(on_memories_changed, dispatch_uid="memory.on_memories_changed")
        memories_changed.connect(mark_conversation, dispatch_uid="memory.mark_conversation")
        memories_changed.connect(on_memories_written, dispatch_uid="memory.on_memories_written")
        extensions.register_demo("memory-judge", json_responder=demo.demo_judge)
        extensions.register_demo("memory-consolidation", json_responder=consolidation_demo.demo_consolidation_judge)
        # A question about something said before ("do you remember what I said about …") searches
        # rather than flushes: tried first.
        extensions.register_demo("memory-search", tool_trigger=demo_search_trigger)
        extensions.register_demo(
            "memory-flush", tool_trigger=demo.demo_tool_trigger, result_wording=demo_wording.demo_result_wording
        )
        # Forgetting that forgets (memory/forgetting.py, SPEC §8): every copy of a memory's text is
        # registered there; work in flight re-checks what it saves; an account's memories for its
        # export and deletion (accounts.data); a deleted conversation's messages leave the run records.
        forgetting.register_defaults()
        forgetting.register_redactor("replay", replay.replay_redact)
        forgetting.register_redactor(
            "tidy-up", consolidation_services.proposals_redact
        )  # by id: the teaching turn, search results
        extensions.register_state_filter("memory-forgetting", forgetting.state_filter)
        extensions.register_conversation_eraser("memory-runs", memory_data.runs_messages_erase)
        # Ending a project moves its memories to the user or deletes them permanently (memory.moves).
        extensions.register_project_ender("memory", moves.project_memories_end)
        data.register_exporter("memories", memory_data.memories_export)
        data.register_eraser("memory", memory_data.account_erase)
        data.register_page_context("memory", memory_data.account_page_context)
        # Connected tools (SPEC §9): a token needs memory:read / memory:write for the memories' routes,
        # and the tokens list shows what each token's program read.
        scopes.register_route_scope("/api/memories", read="memory:read", write="memory:write")
        scopes.register_token_annotator("memory-reads", connected.tokens_annotate)
