"""The offline demo model's consolidation judge — deterministic rules, not a language model.

It merges memories that say nearly the same words (the same terms, chat.terms, with at most a small
difference), keeping the longest sentence, and lets the newer of two memories holding the same key
supersede the older. Anything that merely looks alike ("allergic to peanuts", "likes peanut butter
cookies") is left alone. Real models follow memory/prompts/consolidation.md.
"""

from __future__ import annotations

import json
import re
from typing import Any

from chat.terms import terms
from memory.consolidation.judging import JUDGE_MARKER

_LINE = re.compile(r"^\[(\d+)\] \((\d{4}-\d{2}-\d{2})\) (.*?)(?: \(key: ([a-z_]+)\))?$")
# Words that say nothing about the fact itself.
_FILLER = frozenset({"i", "user", "the", "a", "an", "is", "am", "are", "my", "me", "to", "of", "用户", "我"})
SAME = 0.8  # the share of terms two sentences must have in common to be the same fact


def _words(text: str) -> set[str]:
    return {t for t in terms(text) if t not in _FILLER}


def same_fact(a: str, b: str) -> bool:
    wa, wb = _words(a), _words(b)
    if not wa or not wb:
        return False
    return len(wa & wb) / len(wa | wb) >= SAME


def answer(user_text: str) -> str:
    rows = [m.groups() for line in user_text.splitlines() if (m := _LINE.match(line.strip()))]
    memories = [(int(i), text, key or "") for i, _day, text, key in rows]
    used: set[int] = set()
    proposals: list[dict[str, Any]] = []
    for index, (first, text, key) in enumerate(memories):
        if first in used:
            continue
        later = memories[index + 1 :]
        keyed = [m for m in later if key and m[2] == key and m[0] not in used]
        if keyed:
            proposals.append({"op": "supersede", "id": first, "by": keyed[-1][0]})
            used |= {first}
            continue
        group = [(first, text)] + [(i, t) for i, t, _k in later if i not in used and same_fact(text, t)]
        if len(group) > 1:
            used |= {i for i, _t in group}
            longest = max((t for _i, t in group), key=len)
            proposals.append({"op": "merge", "ids": [i for i, _t in group], "content": longest})
    return json.dumps({"proposals": proposals}, ensure_ascii=False)


def demo_consolidation_judge(messages: list[dict[str, Any]]) -> str | None:
    """The demo model's JSON responder for consolidation calls (chat.extensions); others are left alone."""
    if not messages or not str(messages[0].get("content", "")).startswith(JUDGE_MARKER):
        return None
    user = next((m for m in messages if m.get("role") == "user"), None)
    return answer(str(user.get("content", "")) if user else "")
