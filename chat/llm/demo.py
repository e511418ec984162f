"""The offline demo model: deterministic, no network, streams word by word, and says what it is.

It lets the whole product be demonstrated without a provider. It is not a language model: its
replies are built from simple rules over the request it receives.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import get_language, gettext_noop
from django.utils.translation import gettext as _

from chat import extensions
from chat.llm import metering
from chat.llm.base import ChatModel, Messages, StreamChunk, TextDelta, ToolCall, ToolCalls
from chat.prompts import system_prompt as default_system_prompt

WORD_DELAY_SECONDS = 0.02


YOU_SAID = gettext_noop("(Offline demo model — no AI provider is configured.) You said: “%(said)s”.")
SET_A_KEY = gettext_noop("Set OPENAI_API_KEY or OPENAI_BASE_URL to talk to a real model.")


def _last_index(messages: Messages, role: str) -> int | None:
    """Position of the last message with `role` (by position: equal messages may repeat)."""
    return next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == role), None)


def _background_lines(messages: Messages, prompt: str) -> list[str]:
    """Bullet lines from the context-provider blocks (e.g. memories): what follows the system prompt in
    the (single) system message, or the system messages after the first."""
    systems = [str(m.get("content", "")) for m in messages if m.get("role") == "system"]
    if not systems:
        return []
    blocks = [systems[0][len(prompt) :] if systems[0].startswith(prompt) else "", *systems[1:]]
    lines: list[str] = []
    for block in blocks:
        lines += [_in_reply_language(ln[2:].strip()) for ln in block.splitlines() if ln.startswith("- ")]
    return lines


# The notes after a memory in the block: its end date, and when it was learned (in the block's language,
# the user's setting or the site's, which may not be the reply's).
_UNTIL = re.compile(r" \(until (\d{4})-(\d{2})-(\d{2})\)")
_LEARNED_IN_ENGLISH = re.compile(r" \(learned [^()]*\)")


def _in_reply_language(line: str) -> str:
    """A memory's line as a Chinese reply says it: the end date the Chinese way ("（到 2026年12月6日）"), and
    no English note it cannot say in Chinese ("(learned Dec. 2, 2026)"); an English reply keeps the line."""
    if not (get_language() or "").startswith("zh"):
        return line
    line = _UNTIL.sub(lambda m: f"（到 {int(m[1])}年{int(m[2])}月{int(m[3])}日）", line)
    return _LEARNED_IN_ENGLISH.sub("", line)


def boilerplate() -> re.Pattern[str]:
    """The demo's framing, in every language ("(Offline demo model — no AI provider is configured.)" and
    "Set OPENAI_API_KEY …"): search leaves it out of its excerpts."""
    sentences = []
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            framing = (_(YOU_SAID) % {"said": "\x00"}).split("\x00")[0]
            # The parenthesis before "You said": the first sentence, whatever the language's punctuation.
            framing = framing[: max(framing.find(")"), framing.find("）")) + 1]
            sentences += [re.escape(framing), re.escape(_(SET_A_KEY))]
    return re.compile(r"\s*(?:" + "|".join(s for s in sentences if s) + r")\s*")


def sentence_separator() -> str:
    """What goes between two sentences: a space, except in Chinese, which writes none."""
    return "" if (get_language() or "").startswith("zh") else " "


def _tool_result_wording(text: str) -> str:
    """A tool's result as the user should read it (the tools write theirs for the model, in English)."""
    for wording in extensions.demo_result_wordings():
        said = wording(text)
        if said is not None:
            return said
    return text


class DemoChatModel(ChatModel):
    label = "Offline demo model"
    is_demo = True

    def __init__(self, *, system_prompt: str | None = None) -> None:
        """`system_prompt`: what the turn's input starts with (chat's own by default); what follows it in
        the system message are the context providers' blocks, which the demo reads back."""
        super().__init__()
        self.system_prompt = system_prompt if system_prompt is not None else default_system_prompt()

    def reply_for(self, messages: Messages) -> str:
        at = _last_index(messages, "user")
        said = " ".join(str(messages[at].get("content", "")).split()) if at is not None else ""
        if len(said) > 160:
            said = said[:157] + "…"
        # The fixed sentences follow the turn's language (chat.turn.runner activates the user's).
        parts = [_(YOU_SAID) % {"said": said}]
        # Only this turn's tool results: those after the latest user message.
        tool_results = [m for m in messages[(at or 0) :] if m.get("role") == "tool"]
        for result in tool_results:
            parts.append(_tool_result_wording(str(result.get("content", ""))))
        background = _background_lines(messages, self.system_prompt)
        if background:
            parts.append(_("What I remember about you: %(memories)s.") % {"memories": _("; ").join(background)})
        parts.append(_(SET_A_KEY))
        return sentence_separator().join(parts)

    def _tool_to_call(self, messages: Messages, tools: list[dict[str, Any]] | None) -> tuple[str, str] | None:
        """The tool the demo calls for the latest user text and its arguments (JSON), or None."""
        last = messages[-1] if messages else {}
        if not tools or last.get("role") != "user":  # at most one tool round per user message
            return None
        names = {t["function"]["name"] for t in tools}
        # Other apps' features take part through chat.extensions (e.g. memory.demo).
        for trigger in extensions.demo_tool_triggers():
            chosen = trigger(str(last.get("content", "")), names)
            name, arguments = chosen if isinstance(chosen, tuple) else (chosen, {})
            if name is not None and name in names:
                return name, json.dumps(arguments, ensure_ascii=False)
        return None

    async def stream(
        self, *, messages: Messages, tools: list[dict[str, Any]] | None = None, **ignored: Any
    ) -> AsyncIterator[StreamChunk]:
        """A tool call a rule picks, else the reply word by word. Written by rule, not by a model: neither
        `max_tokens` nor `model` changes it."""
        tool = self._tool_to_call(messages, tools)
        if tool is not None:
            yield ToolCalls([ToolCall(id=f"call_demo_{len(messages)}", name=tool[0], arguments=tool[1])])
            return
        words = re.findall(r"\S+\s*", self.reply_for(messages))
        for word in words:
            await asyncio.sleep(WORD_DELAY_SECONDS)
            yield TextDelta(word)

    def complete_text(self, *, messages: Messages, model: str, max_tokens: int, timeout: float) -> str:
        """A summary made of the user's own lines (the demo writes no prose of its own)."""
        text = str(messages[-1].get("content", "")) if messages else ""
        said = [line[6:].strip() for line in text.splitlines() if line.startswith("User: ")]
        summary = "Earlier, the user said: " + "; ".join(s[:120] for s in said[-8:]) if said else "Nothing to note."
        return _noted(model, messages, summary[: max_tokens * 3])

    def complete_json(self, *, messages: Messages, model: str, **ignored: Any) -> str:
        """The first registered responder's answer (chat.extensions), else no operations. Written at once by
        rule: temperature, timeout, max_tokens and schema have nothing to change."""
        for responder in extensions.demo_json_responders():
            answer = responder(messages)
            if answer is not None:
                return _noted(model, messages, answer)
        return _noted(model, messages, json.dumps({"operations": []}))


def _noted(model: str, messages: Messages, answer: str) -> str:
    """`answer`, its estimated counts noted for the usage records (the demo reports no usage, and costs 0)."""
    metering.note(
        model=model,
        prompt_tokens=None,
        completion_tokens=None,
        estimate=lambda: metering.estimate_call(model=model, messages=messages, answer=answer),
    )
    return answer
