"""Memory for the offline demo model — a demo, not a language model.

Two hooks plug into the offline demo model (`chat.llm.demo`) through chat.extensions (memory/apps.py):

- `demo_judge` answers judge calls with a few deterministic rules, in English and (roughly) Chinese,
  good enough to walk through the product flow with no provider: a stable preference about the user
  is added, and so is a lasting preference about how to be served (reply language, units, length,
  format, tone); a changed one updates the old memory, "forget my … preference" retracts it, "forget
  everything about me" clears; questions, requests, other people's facts, one-off details, pronouns
  with nothing to refer to and instructions granting permissions are ignored. The golden cases marked
  `demo: true` in memory/evals/golden.yaml are the ones these rules cover.
- `demo_tool_trigger` makes the demo chat model call `flush_memory` only when the user explicitly asks
  to remember or forget something, or corrects what it knows ("I prefer big screens now", "no
  longer", "actually …"). A preference said in passing is left to the background run, which reviews
  it once three messages are pending (SPEC §1 step 2).

The rules that read a sentence are in memory/demo/rules.py; what the demo model says about the flush
tool's result, in memory/demo/wording.py. Real models follow `memory/prompts/judge.md`; nothing here is
used with a real provider.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from memory import grants, lexicon
from memory.demo.rules import (
    CLEAR,
    FORGET,
    REMEMBER,
    SENTENCES,
    for_this_project,
    memory_extras,
    project_statement,
    related,
    same,
    statement_content,
    time_bound,
)
from memory.extraction.judge import PROJECT_NOTE
from memory.extraction.judge.request import message_days, parse_judge_input, project_memories

JUDGE_MARKER = "# Memory judge"

# The first words of the note a project's batch begins with (memory.extraction.judge.PROJECT_NOTE).
_PROJECT_BATCH = PROJECT_NOTE["shared"].split('"', 1)[0]


@dataclass
class _Judgement:
    """The demo judge's working state while it reads the messages in order."""

    memories: dict[int, str]
    operations: list[dict[str, Any]] = field(default_factory=list)
    # New facts of this answer: content -> index in operations
    pending_adds: dict[str, int] = field(default_factory=dict)
    # A project's batch (SPEC §9): facts about the work go to the project, the rest to the user.
    in_project: bool = False
    project_ids: set[int] = field(default_factory=set)  # the memories shown as the project's

    def clear(self) -> None:
        self.operations = [{"op": "clear"}]
        self.memories, self.pending_adds = {}, {}

    def forget(self, about: str) -> None:
        for memory_id, content in list(self.memories.items()):
            if related(about, content):
                self.operations.append({"op": "retract", "id": memory_id})
                del self.memories[memory_id]
        for content, index in list(self.pending_adds.items()):
            if related(about, content):
                self.operations[index] = {"op": "noop"}
                del self.pending_adds[content]

    def state(self, content: str, number: int, expires: str | None = None, scope: str = "") -> None:
        if any(same(content, known) for known in [*self.memories.values(), *self.pending_adds]):
            return
        extras = memory_extras(content) | ({"expires": expires} if expires else {})
        if self.in_project:
            extras["scope"] = scope or "user"
        for memory_id, existing in list(self.memories.items()):
            if self.in_project and (memory_id in self.project_ids) != (extras["scope"] == "project"):
                continue  # another scope's memory: this fact goes beside it, not over it
            if related(content, existing):
                self.operations.append(
                    {"op": "update", "id": memory_id, "content": content, "sources": [number], **extras}
                )
                del self.memories[memory_id]
                self.pending_adds[content] = len(self.operations) - 1
                return
        for existing, index in list(self.pending_adds.items()):
            if related(content, existing):
                self.operations[index] = {**self.operations[index], "content": content}
                del self.pending_adds[existing]
                self.pending_adds[content] = index
                return
        self.operations.append({"op": "add", "content": content, "sources": [number], **extras})
        self.pending_adds[content] = len(self.operations) - 1

    def read(self, number: int, text: str, sent: date | None = None) -> None:
        if CLEAR.search(text):
            self.clear()
            return
        if m := FORGET.search(text):
            self.forget(m["rest"] or m["zh"] or "")
            return
        for sentence in SENTENCES.findall(text) or [text]:
            if bound := time_bound(REMEMBER.sub("", sentence), sent):
                self.state(bound[0], number, expires=bound[1])
                continue
            if self.in_project and (work := project_statement(sentence)):
                self.state(work, number, scope="project")
                continue
            content = statement_content(sentence)
            if content:
                self.state(content, number, scope="project" if for_this_project(sentence) else "user")


def judge_answer(user_text: str) -> str:
    memories, messages = parse_judge_input(user_text)
    days = message_days(user_text)
    judgement = _Judgement(
        memories=dict(memories), in_project=_PROJECT_BATCH in user_text, project_ids=project_memories(user_text)
    )
    for number, text in messages:
        judgement.read(number, grants.simplified(text), days.get(number))  # rules written in Simplified
    return json.dumps({"operations": [o for o in judgement.operations if o["op"] != "noop"]}, ensure_ascii=False)


# --- the two hooks -------------------------------------------------------------------------------


def demo_judge(messages: list[dict[str, Any]]) -> str | None:
    """The demo model's JSON responder (chat.extensions): answers judge calls, leaves any other JSON call alone."""
    if not messages or not str(messages[0].get("content", "")).startswith(JUDGE_MARKER):
        return None
    user = next((m for m in messages if m.get("role") == "user"), None)
    return judge_answer(str(user.get("content", "")) if user else "")


_NOW = re.compile(r"\bnow\b", re.I)
_CORRECTION = re.compile(r"\bany ?more\b|现在更喜欢", re.I)


def explicit_request(text: str) -> bool:
    """Whether the user asks to remember, correct or forget something (not a fact said in passing): the
    shared vocabulary (memory.lexicon), a forget-everything, or a stated fact that replaces an earlier
    one ("I prefer big screens now")."""
    if lexicon.is_explicit_request(text) or CLEAR.search(text) or _CORRECTION.search(text):
        return True
    return any(_NOW.search(s) and statement_content(s) for s in SENTENCES.findall(text) or [text])


def demo_tool_trigger(text: str, tools: set[str]) -> str | None:
    """The demo model's tool trigger (chat.extensions): call flush_memory for explicit remember, correct
    or forget requests."""
    if "flush_memory" in tools and explicit_request(text):
        return "flush_memory"
    return None
