"""The model input of a turn: the system prompt, the project's instructions and the context providers'
blocks, then the stored context and the new message, assembled for each step (chat.turn.agent)."""

from __future__ import annotations

import logging
from typing import Any

from chat import extensions
from chat.extensions import TurnContext
from chat.llm import single_system_message, tokens
from chat.prompts import system_prompt
from chat.turn import cut

logger = logging.getLogger(__name__)
# Appended, in the agent state only, to a reply that was stopped or failed half-way.
CUT_SHORT = " [reply cut short]"


# A project's instructions (SPEC §9): the user's own words for one piece of work, sent with each of its turns.
PROJECT_HEADER = (
    'This conversation belongs to the user\'s project "{name}". The user gave these instructions for the '
    "project's conversations; follow them unless the current message asks otherwise:"
)


def project_instructions(ctx: TurnContext) -> str | None:
    """The note with the conversation's project instructions, or None (no project, or no instructions)."""
    project = ctx.conversation.project if ctx.conversation.project_id is not None else None
    if project is None or not project.instructions.strip():
        return None
    return f"{PROJECT_HEADER.format(name=project.name)}\n{project.instructions.strip()}"


def build_model_input(ctx: TurnContext, context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One system message (the system prompt, the project's instructions, then one block per context
    provider), the stored context, the new message.

    Provider blocks are rebuilt every turn and never stored, so an edit takes effect next turn. They
    are part of the one system message, as is any system item in the stored context (a summary):
    many chat templates keep a single system message and silently drop the others.
    """
    parts = [system_prompt()]
    instructions = project_instructions(ctx)
    if instructions:
        parts.append(instructions)
    ctx.block_tokens.clear()
    for name, provider in extensions.named_context_providers():
        try:
            block = provider(ctx)
        except Exception:  # a broken provider must not break chat
            logger.exception("context provider failed")
            continue
        if block:
            parts.append(block)
            ctx.block_tokens[name] = tokens.estimate_text(block)
    system = {"role": "system", "content": "\n\n".join(parts)}
    replayed = [cut.framed(context[0]), *context[1:]] if context else []
    return single_system_message([system, *replayed, {"role": "user", "content": ctx.user_message.content}])
