"""Where an imported project's chats land: one Memora project per project of the export, created on demand.

Claude's `projects.json` names its projects; ChatGPT's export names none, so its project chats land in one
project per `conversation_template_id`, named "ChatGPT project 1", "ChatGPT project 2", … in the order
they are met (the user renames them). A project an earlier import of the same product created for the
same key is used again, so re-importing adds nothing. `projects_remove` deletes, when an import is
removed, the projects it created that nothing else is in (no conversation, no memory).
"""

from __future__ import annotations

from django.utils import translation
from django.utils.translation import gettext as _

from accounts.middleware import background_language
from accounts.models import User
from chat.models import Conversation, Project
from chat.projects import project_create
from imports.formats import CHATGPT
from imports.models import ChatImport, ImportedProject
from memory.models import Memory

NAMES = {CHATGPT: "ChatGPT", "claude": "Claude"}


class Places:
    """The projects of one import run: export project key -> Memora project."""

    def __init__(self, *, user: User, chat_import: ChatImport, names: dict[str, str]) -> None:
        self.user, self.chat_import, self.names = user, chat_import, names
        self.known: dict[str, Project] = {}

    def project_for(self, key: str) -> Project | None:
        if not key:
            return None
        if key not in self.known:
            self.known[key] = self._existing(key) or self._create(key)
        return self.known[key]

    def _existing(self, key: str) -> Project | None:
        link = (
            ImportedProject.objects.filter(chat_import__owner=self.user, source=self.chat_import.source, key=key)
            .select_related("project")
            .first()
        )
        return link.project if link is not None else None

    def _create(self, key: str) -> Project:
        source = self.chat_import.source
        name = " ".join(self.names.get(key, "").split())[: Project.NAME_MAX]
        if not name:
            number = ImportedProject.objects.filter(chat_import__owner=self.user, source=source).count() + 1
            with translation.override(background_language(self.user)):
                name = _("%(product)s project %(number)s") % {"product": NAMES[source], "number": number}
        project = project_create(user=self.user, name=name)
        ImportedProject.objects.create(chat_import=self.chat_import, project=project, source=source, key=key)
        return project


def projects_remove(*, chat_import: ChatImport) -> int:
    """Delete the projects this import created that hold nothing now; returns how many went."""
    removed = 0
    for link in ImportedProject.objects.filter(chat_import=chat_import).select_related("project"):
        project = link.project
        busy = Conversation.objects.filter(project=project).exists() or Memory.objects.filter(project=project).exists()
        if not busy:
            project.delete()
            removed += 1
    return removed
