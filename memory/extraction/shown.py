"""What the judge is shown of the user's memories (SPEC §9, "Extraction changes"): the ones that matter to
its batch, not all of them, so the cost of learning does not grow with what the user already has.

Shown, in this order of priority and then oldest first as the judge reads them:

1. the memories holding a key (memory.models.MemoryKey) that the batch's messages touch: a word of
   `KEY_WORDS` in a message (a changed reply language must update the memory holding it);
2. the pinned ones (how the user wants to be served, what must never be missed);
3. the memories relevant to the batch's messages, ranked as a turn's block ranks them
   (memory.relevance: lexically, and by meaning where embeddings run);
4. the memories about a preference the batch touches though they hold no key ("Lives in Lyon." when a
   message says "I moved to Berlin"): words alone miss what a change of mind is about;
5. the newest few (`SHOWN_NEWEST`), as a refinement is most often of a fact learned lately; and when a
   message explicitly asks to remember, correct or forget something (memory.lexicon), the newest of
   all the rest: "forget my screen preference" names a memory by what it is about, which its words need
   not share (rare, so it costs little).

At most `SHOWN_MAX` memories and `WINDOW_SHARE` of the judge's window (memory.extraction.batching), and no more than
the batch's messages leave, down to `MIN_SHARE`: more memories never mean more judge calls.

Validation still knows every active memory: a duplicate of one not shown is dropped, a second value of a
key becomes an update of its holder, and an `update` or `retract` naming a memory the judge was not shown
is dropped with a reason (memory.extraction.judge.validation).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from chat.llm.tokens import estimate_text
from memory.extraction import batching, judge
from memory.lexicon import is_explicit_request
from memory.recall import Candidate
from memory.relevance import relevant
from memory.scopes import scope_of_batch
from memory.selectors import memory_rows_for_turn

#: fewer than 100 memories in any judge request
SHOWN_MAX = 99
#: the share of the judge's window the memories shown may take, and the share they keep beside a long batch
WINDOW_SHARE = 0.4
MIN_SHARE = 0.15
#: the newest memories shown whatever the batch says
SHOWN_NEWEST = 10

# Words that touch a single-valued preference: English word starts, Chinese pieces ("|" between them).
KEY_WORDS: dict[str, str] = {
    "reply_language": "language|english|chinese|mandarin|cantonese|french|german|spanish|japanese|korean|italian|"
    "portuguese|russian|reply in|answer in|respond in|speak|语言|中文|英文|英语|汉语|日语|法语|德语|韩语|回答我|回复",
    "form_of_address": "call me|address me|my name|name is|nickname|refer to me|叫我|称呼|名字",
    "units": "unit|metric|imperial|celsius|fahrenheit|kilomet|mile|pound|kilogram|feet|inch|"
    "单位|公制|英制|摄氏|华氏|公里|英里|公斤|英尺",
    "answer_length": "short|brief|concise|long|length|detail|verbose|bullet|简短|简洁|详细|长一点|短一点|篇幅|啰嗦",
    "tone": "tone|formal|casual|friendly|polite|blunt|humor|语气|正式|随意|幽默",
    "timezone": "time zone|timezone|utc|gmt|pst|est|cet|时区|时差",
    "home_city": "live in|lives in|lived in|living in|moved|move to|moving to|home|city|hometown|relocat|"
    "住在|搬到|搬家|老家|城市|定居",
    "diet": "vegan|vegetarian|diet|meat|halal|kosher|gluten|allerg|pescatarian|eat|"
    "素食|吃素|饮食|清真|过敏|忌口|不吃|吃肉",
}
_KEY_PATTERNS = {
    key: re.compile(
        "|".join(rf"\b{re.escape(w)}" if w.isascii() else re.escape(w) for w in words.split("|")), re.IGNORECASE
    )
    for key, words in KEY_WORDS.items()
}


def keys_touched(texts: Sequence[str]) -> set[str]:
    """The keys whose words appear in any of the texts."""
    return {key for key, pattern in _KEY_PATTERNS.items() if any(pattern.search(t) for t in texts)}


def memories_for_batch(
    *, user_id: int, pending: Sequence[judge.PendingMessage], room: int | None = None
) -> list[judge.ActiveMemory]:
    """The active memories the judge is shown beside these messages, oldest first (see the module
    docstring), within `budget(room)`; the rows are read once, as a turn reads them, of the batch's scope (the
    memories a chat of it uses, memory.scopes)."""
    view = scope_of_batch(pending)
    rows = memory_rows_for_turn(user_id=user_id, project_id=view.project_id, with_user=view.reads_user)
    memories = [Candidate._make(row) for row in rows]
    return choose(user_id=user_id, memories=memories, pending=pending, budget=budget(room))


def budget(room: int | None = None) -> int:
    """The tokens the memories shown may take: WINDOW_SHARE of the judge's window, or less when the batch
    leaves only `room` (the batch comes first, so more memories never mean more calls), but never less
    than MIN_SHARE of it (a judge that sees nothing would add duplicates in other words)."""
    window = batching.window()
    share = window * WINDOW_SHARE if room is None else max(window * MIN_SHARE, min(window * WINDOW_SHARE, room))
    return int(share)


def choose(
    *, user_id: int, memories: Sequence[Candidate], pending: Sequence[judge.PendingMessage], budget: int
) -> list[judge.ActiveMemory]:
    """Of `memories` (oldest first), the ones to show within `budget` tokens and SHOWN_MAX, oldest first."""
    in_project = any(m.project_id is not None for m in pending)  # then each memory says its scope
    chosen: set[int] = set()
    used = 0
    for candidate in _by_priority(user_id=user_id, memories=memories, texts=[m.content for m in pending]):
        if len(chosen) >= SHOWN_MAX:
            break
        if candidate.id in chosen:
            continue
        cost = estimate_text(_shown(candidate, in_project=in_project).line()) + 1
        if used + cost <= budget:  # else a shorter one after it may still fit
            chosen.add(candidate.id)
            used += cost
    return [_shown(c, in_project=in_project) for c in memories if c.id in chosen]


def _by_priority(*, user_id: int, memories: Sequence[Candidate], texts: list[str]) -> list[Candidate]:
    """The candidates in the module docstring's order of priority (a memory may come more than once)."""
    keyed, about = _touched(memories, keys_touched(texts))
    ranked = relevant(user_id=user_id, memories=memories, message="\n".join(texts), limit=SHOWN_MAX) if memories else []
    newest = list(reversed(memories))
    if not any(is_explicit_request(t) for t in texts):
        newest = newest[:SHOWN_NEWEST]
    return [*keyed, *(c for c in memories if c.pinned), *ranked, *about, *newest]


def _touched(memories: Sequence[Candidate], keys: set[str]) -> tuple[list[Candidate], list[Candidate]]:
    """The memories holding one of `keys`, and those whose words are about one of them."""
    patterns = [_KEY_PATTERNS[key] for key in sorted(keys)]
    keyed = [c for c in memories if c.key and c.key in keys]
    return keyed, [c for c in memories if any(p.search(c.content) for p in patterns)]


def _shown(candidate: Candidate, *, in_project: bool = False) -> judge.ActiveMemory:
    return judge.ActiveMemory(
        candidate.id, candidate.content, candidate.key, candidate.expires_at, candidate.project, in_project
    )
