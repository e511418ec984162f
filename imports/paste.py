""" "Paste what your old assistant remembers": the list ChatGPT or Claude prints when asked, one fact a line.

Each line that states a fact becomes a suggestion (origin `imported`) whose source is the pasted text,
kept as a message of its own conversation ("Memories pasted from ChatGPT"), so that the suggestion cites
where it came from and Remove takes it all away. The same code-level guards as learned memories apply
(memory.extraction.judge.content.clean_content: credentials and permission grants are refused, over-long lines
too), sensitive facts are marked (memory.lexicon), and a line already remembered or suggested is left
out. The same text pasted twice adds nothing the second time.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import User
from chat.models import AgentState, Conversation, Message
from chat.search.index import search_index_messages
from imports.formats import CHATGPT, CLAUDE
from imports.models import ChatImport, ImportedConversation
from imports.services import ImportRejected
from memory import lexicon
from memory.extraction.judge.content import clean_content
from memory.models import Memory, MemorySource

PASTE_MAX_CHARS = 50_000
# A list's marks ("- ", "* ", "• ", "1. ", "2)") and headings ("Here is what I remember:") are not facts.
BULLET = re.compile(r"^\s*(?:[-*•·]|\d{1,3}[.)、]|[（(]?\d{1,3}[)）])\s*")
NAMES = {CHATGPT: "ChatGPT", CLAUDE: "Claude"}


@dataclass
class Facts:
    kept: list[tuple[str, bool]] = field(default_factory=list)  # (sentence, sensitive)
    refused: list[dict[str, object]] = field(default_factory=list)  # {"line": n, "reason": …}, never the text


def facts_of(text: str) -> Facts:
    facts = Facts()
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = BULLET.sub("", line).strip().strip("*_").strip()
        if not stripped or stripped.endswith((":", "：")) or stripped.startswith("#"):
            continue
        sentence, problem = clean_content(stripped)
        if problem:
            facts.refused.append({"line": number, "reason": problem})
        elif sentence not in seen:
            seen.add(sentence)
            facts.kept.append((sentence, lexicon.is_sensitive(sentence)))
    return facts


def _clean(text: object, source: object) -> tuple[str, str]:
    if source not in NAMES:
        raise ImportRejected(_("Unknown source: use chatgpt or claude."), status=422)
    if not isinstance(text, str) or not text.strip():
        raise ImportRejected(_("Paste the text your old assistant printed."), status=422)
    if len(text) > PASTE_MAX_CHARS:
        raise ImportRejected(
            _("The pasted text is too long: %(length)s characters; the limit is %(limit)s.")
            % {"length": len(text), "limit": PASTE_MAX_CHARS},
            status=422,
        )
    if "\x00" in text:
        raise ImportRejected(_("The pasted text contains a NUL character, which is not allowed."), status=422)
    return text.strip(), str(source)


@transaction.atomic
def paste_create(*, user: User, text: object, source: object) -> ChatImport:
    text, source = _clean(text, source)
    digest = "memory:" + hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:40]
    if Conversation.objects.filter(owner=user, imported_from=source, imported_id=digest).exists():
        raise ImportRejected(_("This text was pasted already; nothing new was added."), status=409)
    facts = facts_of(text)
    title = _("Memories pasted from %(product)s") % {"product": NAMES[source]}
    conversation = Conversation.objects.create(owner=user, title=title, imported_from=source, imported_id=digest)
    AgentState.objects.create(conversation=conversation)
    message = Message.objects.create(
        conversation=conversation,
        user=user,
        role=Message.Role.USER,
        content=text,
        memory_status=Message.MemoryStatus.SKIPPED,
    )
    search_index_messages(messages=[message], replace=False, retitled=conversation)
    row = ChatImport.objects.create(
        owner=user,
        kind=ChatImport.Kind.PASTE,
        source=source,
        status=ChatImport.Status.DONE,
        conversations=1,
        messages=1,
        skipped=len(facts.refused),
        progress=1.0,
        errors=facts.refused,
        finished_at=timezone.now(),
    )
    ImportedConversation.objects.create(chat_import=row, conversation=conversation)
    taken = set(
        Memory.objects.filter(
            owner=user, invalid_at=None, content__in=[sentence for sentence, _sensitive in facts.kept]
        ).values_list("content", flat=True)
    )
    new = [
        Memory(owner=user, content=s, origin=Memory.Origin.IMPORTED, suggested=True, sensitive=sensitive)
        for s, sensitive in facts.kept
        if s not in taken
    ]
    created = Memory.objects.bulk_create(new)
    MemorySource.objects.bulk_create([MemorySource(memory=m, message=message) for m in created])
    row.learn_suggested = len(created)
    row.learn_status = ChatImport.LearnStatus.DONE
    row.save(update_fields=["learn_suggested", "learn_status"])
    return row
