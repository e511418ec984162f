"""A hit's excerpt: the matched text in context, plain (Markdown syntax removed), with the offsets of what
matched, for a page to mark (escaping the text as always) and for the API's `highlights`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from django.utils.translation import get_language

from chat.llm.demo import boilerplate
from chat.markdown import plain_text
from chat.terms import merged_spans, term_spans

EXCERPT_CHARS = 180
BEFORE_CHARS = 50  # of context kept before the first match
ELLIPSIS = "…"


@dataclass(frozen=True)
class Matcher:
    """What a query matches: its terms, and a prefix for the last one while it is still being typed."""

    terms: frozenset[str]
    prefix: str = ""

    def matches(self, term: str) -> bool:
        return term in self.terms or (bool(self.prefix) and term.startswith(self.prefix))


@lru_cache(maxsize=4)
def _demo_framing(language: str) -> re.Pattern[str]:
    return boilerplate()


def _without_demo_framing(text: str) -> str:
    """The offline demo model's replies without its framing sentences, which every reply repeats."""
    if "OPENAI_API_KEY" not in text:
        return text
    return _demo_framing(get_language() or "").sub(" ", text).strip()


def excerpt(text: str, matcher: Matcher, *, size: int = EXCERPT_CHARS) -> tuple[str, list[list[int]]]:
    """`(excerpt, highlights)`: about `size` characters of `text` around its first match, cut at word
    boundaries and marked with "…" where cut, and the [start, end) offsets of the matches inside it."""
    plain = _without_demo_framing(plain_text(text))
    spans = merged_spans([(s, e) for term, s, e in term_spans(plain) if matcher.matches(term)])
    begin = _begin(plain, spans[0][0], size) if spans else 0
    end = _end(plain, begin, size)
    lead = ELLIPSIS if begin > 0 else ""
    body = lead + plain[begin:end].strip(" ") + (ELLIPSIS if end < len(plain) else "")
    shift = len(lead) - begin - (len(plain[begin:end]) - len(plain[begin:end].lstrip(" ")))
    inside = [(s + shift, e + shift) for s, e in spans if s >= begin and e <= end]
    return body, [[s, e] for s, e in inside]


def _begin(plain: str, first: int, size: int) -> int:
    """Where the excerpt starts: at a word's start BEFORE_CHARS before the first match, when it needs cutting."""
    if first <= BEFORE_CHARS or len(plain) <= size:
        return 0
    begin = first - BEFORE_CHARS
    space = plain.find(" ", begin, first)
    begin = space + 1 if space != -1 else begin
    return min(begin, max(0, len(plain) - size))


def _end(plain: str, begin: int, size: int) -> int:
    """Where the excerpt ends: at a word's end, no more than `size` after `begin`."""
    end = min(len(plain), begin + size)
    if end < len(plain):
        space = plain.rfind(" ", begin + size // 2, end)
        end = space if space != -1 else end
    return end
