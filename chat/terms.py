"""Index terms of a text, for English and Chinese alike: the one tokenising that conversation search and
memory recall share.

Chinese has no spaces, so a run of Han characters becomes its overlapping two-character pieces
("智能手机" → 智能, 能手, 手机): any two-character word of the run is one of them, and a search never needs
to know how the text would have been segmented. A lone Han character stays a term of its own. Latin
words are case-folded and reduced to a light stem ("peanuts" → "peanut", "phones" → "phone"), so word
forms meet; digits are kept as they are. Text is NFKC-normalised first (full-width letters and digits).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Han ideographs (CJK Unified, Extension A, Compatibility) and everything else that is a letter or digit.
_HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_HAN}]+|[^\W_{_HAN}]+", re.UNICODE)
_IS_HAN = re.compile(rf"[{_HAN}]")


_PLURALS = (("ies", "y"), ("sses", "ss"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"))


def stem(word: str) -> str:
    """A light English stem: plural and common verb endings, never shorter than three letters."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    return _singular(word) or _verb_root(word)


def _singular(word: str) -> str | None:
    for suffix, replacement in _PLURALS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            return word[: -len(suffix)] + replacement
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return None


def _verb_root(word: str) -> str:
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def han_bigrams(run: str) -> list[str]:
    """The overlapping two-character pieces of a run of Han characters (the run itself when it is one)."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def terms(text: str) -> list[str]:
    """The index terms of `text`, in order, repeats kept (callers count or de-duplicate as they need)."""
    out: list[str] = []
    for token in _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold()):
        if _IS_HAN.match(token):
            out.extend(han_bigrams(token))
        else:
            out.append(stem(token))
    return out


def term_spans(text: str) -> list[tuple[str, int, int]]:
    """The index terms of `text` with where each stands in it, `(term, start, end)`, for marking what a
    search matched: the terms `terms` gives (a word's span is the whole word, a Han pair's its two
    characters). Tokens are found in the text as given, so the offsets are the text's own."""
    out: list[tuple[str, int, int]] = []
    for match in _TOKEN.finditer(text):
        token, start = match.group(), match.start()
        if _IS_HAN.match(token):
            normal = unicodedata.normalize("NFKC", token)
            token = normal if len(normal) == len(token) else token  # compatibility ideographs, as `terms`
            if len(token) < 2:
                out.append((token, start, start + 1))
            else:
                out.extend((token[i : i + 2], start + i, start + i + 2) for i in range(len(token) - 1))
            continue
        for word in _word_terms(token):
            out.append((word, start, match.end()))
    return out


@lru_cache(maxsize=8192)
def _word_terms(token: str) -> tuple[str, ...]:
    """`terms` of one non-Han token, remembered: the same words come back in every excerpt."""
    return tuple(terms(token))


def is_han(term: str) -> bool:
    """Whether a term is Chinese (a Han character or pair), not a word."""
    return bool(_IS_HAN.match(term))


def merged_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`(start, end)` spans in order, the overlapping or touching ones as one (a Chinese word's character
    pairs overlap)."""
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
