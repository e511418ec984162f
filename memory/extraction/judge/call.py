"""The judge call: how the pipeline asks the model for its answer, and how an evaluation must ask too.

One function, so that `manage.py eval_judge` measures exactly what extraction does: the judge model
(MEMORY_MODEL), the answer's JSON schema (memory/prompts/judge_answer.schema.json, sent where the server
takes one, JSON mode elsewhere: chat.llm.json_formats), the temperature, `max_tokens` (what the
judge's window leaves after the prompt, at most MEMORY_JUDGE_MAX_TOKENS; a longer answer raises
LLMError(kind="length")) and a total deadline (MEMORY_JUDGE_TIMEOUT) that retries and keep-alive bytes
cannot extend.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from django.conf import settings

from chat.llm import ChatModel, Messages, get_chat_model

JUDGE_TEMPERATURE = 0.3
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "prompts" / "judge_answer.schema.json"


@cache
def answer_schema() -> dict[str, Any]:
    """The shape of the judge's answer (memory.extraction.judge.parse_output checks it again, strictly)."""
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def call_judge(
    messages: Messages, *, chat_model: ChatModel | None = None, model: str = "", max_tokens: int | None = None
) -> str:
    """The judge's raw answer to `messages` (see `memory.extraction.judge.render_input`). Raises LLMError.

    `max_tokens` defaults to MEMORY_JUDGE_MAX_TOKENS; extraction passes what the window leaves
    (memory.extraction.batching.max_tokens_for)."""
    return (chat_model or get_chat_model()).complete_json(
        messages=messages,
        model=model or settings.MEMORY_MODEL,
        temperature=JUDGE_TEMPERATURE,
        timeout=float(settings.MEMORY_JUDGE_TIMEOUT),
        max_tokens=int(settings.MEMORY_JUDGE_MAX_TOKENS) if max_tokens is None else max_tokens,
        schema=answer_schema(),
    )
