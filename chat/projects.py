"""Writes of projects (SPEC §9 "Projects"): create, change, end.

A project is one piece of work of a user's: its conversations, its instructions (sent with each of their
turns, chat.turn.model_input) and, through the memory app, its own memories. Ending one asks what becomes of
what it holds: `memories="move"` keeps its conversations (out of any project) and hands its memories to the
user; `memories="delete"` deletes its conversations (with every copy of their messages, as a conversation's
delete does) and, through the project enders (chat.extensions), its memories permanently.
"""

from __future__ import annotations

from typing import Any, Literal

from django.db import transaction
from django.utils.translation import gettext as _

from accounts.models import User
from chat import extensions
from chat.models import Conversation, Project
from chat.services import conversations_erase

EndMode = Literal["delete", "move"]
UNSET: Any = object()


class ProjectRejected(Exception):
    """A project write that cannot be done; nothing was written. `status` is the HTTP status to answer."""

    status = 400


def project_name_clean(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ProjectRejected(_("A project needs a name."))
    text = " ".join(name.split())
    if len(text) > Project.NAME_MAX:
        raise ProjectRejected(
            _("The project name is too long: %(length)d characters; the limit is %(limit)d.")
            % {"length": len(text), "limit": Project.NAME_MAX}
        )
    return text


def project_instructions_clean(instructions: object) -> str:
    if not isinstance(instructions, str):
        raise ProjectRejected(_("Project instructions must be text."))
    text = instructions.strip()
    if len(text) > Project.INSTRUCTIONS_MAX:
        raise ProjectRejected(
            _("The instructions are too long: %(length)d characters; the limit is %(limit)d.")
            % {"length": len(text), "limit": Project.INSTRUCTIONS_MAX}
        )
    if "\x00" in text:
        raise ProjectRejected(_("Project instructions contain a NUL character (\\u0000), which is not allowed."))
    return text


def _mode_clean(mode: object) -> str:
    if mode not in Project.MemoryMode.values:
        raise ProjectRejected(_("Unknown memory mode; use shared, isolated or off."))
    return str(mode)


@transaction.atomic
def project_create(
    *, user: User, name: str, instructions: str = "", memory_mode: str = Project.MemoryMode.SHARED
) -> Project:
    return Project.objects.create(
        owner=user,
        name=project_name_clean(name),
        instructions=project_instructions_clean(instructions),
        memory_mode=_mode_clean(memory_mode),
    )


@transaction.atomic
def project_update(
    *, project: Project, name: Any = UNSET, instructions: Any = UNSET, memory_mode: Any = UNSET
) -> Project:
    """Change any subset of a project's name, instructions and memory mode. A new mode applies from the next
    turn of its conversations; memories already learned keep their scope."""
    fields: list[str] = []
    if name is not UNSET:
        project.name = project_name_clean(name)
        fields.append("name")
    if instructions is not UNSET:
        project.instructions = project_instructions_clean(instructions)
        fields.append("instructions")
    if memory_mode is not UNSET:
        project.memory_mode = _mode_clean(memory_mode)
        fields.append("memory_mode")
    if fields:
        project.save(update_fields=[*fields, "updated_at"])
    return project


@transaction.atomic
def project_end(*, project: Project, memories: EndMode = "move") -> None:
    """Delete the project. "move": its conversations stay (in no project) and its memories become the
    user's, with their history; "delete": its conversations and its memories are deleted permanently,
    leaving no copy of their text."""
    if memories not in ("delete", "move"):
        raise ProjectRejected(_("Say what to do with the project's memories: delete or move."))
    Project.objects.select_for_update().filter(pk=project.pk).first()  # one ending at a time
    ending = extensions.ProjectEnding(user_id=project.owner_id, project_id=project.pk, memories=memories)
    for ender in extensions.project_enders():
        ender(ending)
    conversations = Conversation.objects.filter(owner_id=project.owner_id, project=project)
    if memories == "delete":
        ids = list(conversations.values_list("pk", flat=True))
        conversations_erase(user_id=project.owner_id, conversation_ids=ids)
        Conversation.objects.filter(pk__in=ids).delete()
    else:
        conversations.update(project=None)
    project.delete()
