"""Which memories a turn's block holds (SPEC §8 "Recall", §9 "Recall by meaning"): no queries; each user's
term index is kept in this process for their next turn (`term_index`).

Some memories go into every turn: the pinned ones, and the keyed ones (one value per single-valued
preference, such as the reply language). Those are how the user wants to be served. The rest are
ranked against the new message and the last exchange (the reply to it at half weight); only the relevant
ones count, at most `RECALL_MAX`; recency breaks ties and never adds a memory on its own, so a greeting
carries nothing beyond the always-used ones.

A memory is relevant when it shares a word with the turn (lexical), or when it is close in meaning
(`Meaning`, with embeddings). The lexical score is an IDF-weighted overlap of `chat.terms` index terms
(English light stems, Chinese two-character pieces), the tokenising conversation search uses; common
words carry nothing (`STOPWORDS`). A term many of the user's memories share weighs less than a rare one
but still makes them relevant: a user who cares about a topic has many memories about it, and they are
ordered by what else they share with the message, by similarity and by recency. A dish or a drink also
shares the concept it implies with the dietary facts it bears on (memory.concepts: Sichuan food is spicy).

Closeness in meaning is calibrated, never a fixed floor: small embedding models put unrelated pairs close
together (e5 at 0.75–0.80), so a memory counts when its similarity to the message stands out from the
message's similarity to the user's own memories and to a few reference memories (`MEANING_MARGIN`
standard deviations above their mean). A message with no word that says what it is about (a greeting, a
thank-you) is about nothing by meaning either.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import NamedTuple

import numpy as np

from chat.terms import terms
from memory.concepts import concept_terms

# The last exchange counts beside the new message: the user's previous message fully (a follow-up such as
# "which one do you recommend?" is about it), the reply to it at this weight (it is long, and not the user's).
REPLY_WEIGHT = 0.5
# A memory is relevant when its score reaches this: one term of the new message that it shares (each
# shared term weighs idf = 1 + ln(N/df) ≥ 1), or rarer terms of the last exchange.
LEXICAL_FLOOR = 1.0
# Relevant in meaning: this many standard deviations above the mean similarity of the message to the user's
# memories and the reference ones (measured on the recall set: docs/recall.md); what a standard deviation
# above zero adds to the rank; the most background memories a turn carries.
MEANING_MARGIN = 1.75
MEANING_WEIGHT = 1.0
RECALL_MAX = 12
# The median absolute deviation times this estimates a standard deviation (for a normal distribution): the
# median and MAD are not pulled by the few memories that are about the message, as a mean would be.
ROBUST_SIGMA = 1.4826

# Words that say nothing about what a message is about (English), and Chinese two-character pieces of
# the same kind (pronoun and particle combinations, greetings). Stemmed as `terms` stems.
_ENGLISH = """
a about above after again all also am an and any are as at be been before being below between both but by
can could did do does doing don down during each few for from further had has have having he her here hers
him his how i if in into is it its itself just me more most my myself no nor not now of off on once only or
other our ours out over own please same she should so some such than thank thanks that the their theirs them
then there these they this those through to too under until up very was we were what when where which while
who whom why will with would you your yours yourself yourselves hi hello hey ok okay yes yeah sure morning
evening good great nice well again tell know think want need like get got make let us one thing things really
much many lot today tomorrow yesterday something anything remember
"""
_CHINESE = """
我们 你们 他们 她们 它们 我的 你的 他的 她的 什么 怎么 这个 那个 一个 一下 可以 没有 就是 还是 不是 是不
因为 所以 但是 如果 然后 现在 今天 明天 昨天 你好 您好 早上 上好 晚上 谢谢 请问 知道 觉得 记得 一些 有没 有什
么的 的是 是什 吗？ 好吗 了吗 我是 你是 我想 我要 要一 给我 帮我 告诉 诉我
"""
STOPWORDS = frozenset(terms(_ENGLISH)) | frozenset(_CHINESE.split())


class Candidate(NamedTuple):
    """One active memory as ranking sees it (a named tuple: a turn makes one per memory, from a row)."""

    id: int
    content: str
    pinned: bool = False
    key: str = ""
    expires_at: datetime | None = None
    # Its scope (SPEC §9): None about the user, else the project's id.
    project: int | None = None
    learned_at: datetime | None = None  # when it was written (the block says how old a background fact is)

    @property
    def always(self) -> bool:
        """In every turn: pinned, or holding a single-valued preference (how the user wants to be served)."""
        return self.pinned or bool(self.key)


def memory_terms(content: str) -> frozenset[str]:
    """The distinct index terms of a memory that can make it relevant, the concepts it names included."""
    return frozenset(_meaningful(terms(content))) | concept_terms(content)


def _meaningful(items: Iterable[str]) -> Iterable[str]:
    return (t for t in items if t not in STOPWORDS and (len(t) > 1 or not t.isascii()))


def query_weights(message: str, previous: str = "", reply: str = "") -> dict[str, float]:
    """The terms of the turn's text with their weights: the new message's and the user's previous one at 1,
    the reply between them lower."""
    weights = dict.fromkeys([*_meaningful(terms(reply)), *concept_terms(reply)], REPLY_WEIGHT)
    user_text = f"{previous}\n{message}"
    weights.update(dict.fromkeys([*_meaningful(terms(user_text)), *concept_terms(user_text)], 1.0))
    return weights


class TermIndex:
    """Ranking's candidates (in order) by term: scoring a turn's query reads only the postings of its own
    terms. Built once per set of memories and kept per user (`term_index`); only order and text matter."""

    def __init__(self, candidates: Sequence[Candidate], reuse: TermIndex | None = None) -> None:
        known = reuse.terms if reuse is not None else {}
        self.contents = tuple(c.content for c in candidates)
        self.terms: dict[str, frozenset[str]] = {}  # by memory text: a kept index reuses what it found
        self.postings: dict[str, list[int]] = {}
        for position, content in enumerate(self.contents):
            found = known.get(content)
            if found is None:
                found = memory_terms(content)
            self.terms[content] = found
            for term in found:
                self.postings.setdefault(term, []).append(position)

    def scores(self, weights: dict[str, float]) -> list[float]:
        """Each candidate's score, in order: the IDF-weighted sum of the query terms it shares (a term every
        memory shares still weighs 1)."""
        n = len(self.contents)
        scores = [0.0] * n
        for term, weight in weights.items():
            positions = self.postings.get(term)
            if not positions:
                continue
            add = weight * (1 + math.log(n / len(positions)))
            for position in positions:
                scores[position] += add
        return scores


class _KeptIndexes:
    """Each user's index, for their next turn, in this process: most recently used last, within a bound on
    the memories they index together (an empty index counts as one). An index is replaced when the user's
    memories change, and dropped when memories of theirs are deleted here (`forget`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._indexes: OrderedDict[int, TermIndex] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, owner: int) -> TermIndex | None:
        with self._lock:
            return self._indexes.get(owner)

    def put(self, owner: int, index: TermIndex) -> None:
        with self._lock:
            self._pop(owner)
            self._indexes[owner] = index
            self._size += max(1, len(index.contents))
            while self._size > self.limit and len(self._indexes) > 1:
                self._pop(next(iter(self._indexes)))

    def forget(self, owner: int) -> None:
        with self._lock:
            self._pop(owner)

    def clear(self) -> None:
        with self._lock:
            self._indexes.clear()
            self._size = 0

    def __len__(self) -> int:
        return len(self._indexes)

    def _pop(self, owner: int) -> None:
        index = self._indexes.pop(owner, None)
        if index is not None:
            self._size -= max(1, len(index.contents))


kept_indexes = _KeptIndexes(limit=50_000)


def term_index(owner: int, candidates: Sequence[Candidate]) -> TermIndex:
    """The user's index of these candidates: the kept one while they are the same memories, else a new one."""
    kept = kept_indexes.get(owner)
    if kept is not None and kept.contents == tuple(c.content for c in candidates):
        index = kept
    else:
        index = TermIndex(candidates, reuse=kept)  # unlocked: a new user's first index takes milliseconds
    kept_indexes.put(owner, index)
    return index


class Meaning:
    """The turn's closeness in meaning to each memory, calibrated: `standing(id)` is how many standard
    deviations a memory's similarity to the message lies above the mean of the message's similarities to
    every given vector (the user's memories, pinned and keyed ones too, and `reference`, memories of no one
    in particular that keep the measure steady for a user with few memories)."""

    def __init__(
        self,
        query_vector: Sequence[float],
        vectors: dict[int, Sequence[float]],
        reference: Sequence[Sequence[float]] = (),
    ) -> None:
        ids = list(vectors)
        rows = [vectors[pk] for pk in ids] + list(reference)
        dims = len(query_vector)
        usable = [i for i, row in enumerate(rows) if len(row) == dims]
        self._standing: dict[int, float] = {}
        if len(usable) < 2:
            return
        matrix = np.asarray([rows[i] for i in usable], dtype=np.float32)
        similarity = matrix @ np.asarray(query_vector, dtype=np.float32)
        centre = float(np.median(similarity))
        # (never below half the standard deviation: a few distinct values, as a toy model gives, make the
        # median deviation all but zero)
        spread = max(ROBUST_SIGMA * float(np.median(np.abs(similarity - centre))), float(similarity.std()) / 2)
        if spread <= 0:
            return
        standing = (similarity - centre) / spread
        self._standing = {ids[i]: float(z) for i, z in zip(usable, standing, strict=True) if i < len(ids)}

    def standing(self, memory_id: int) -> float:
        return self._standing.get(memory_id, 0.0)


def is_about_something(message: str) -> bool:
    """Whether the message has a word that says what it is about (not only greetings and particles)."""
    return any(True for _ in _meaningful(terms(message)))


def rank(
    candidates: Sequence[Candidate],
    *,
    message: str,
    previous: str = "",
    reply: str = "",
    meaning: Meaning | None = None,
    owner: int | None = None,
    reuse: TermIndex | None = None,
    limit: int = RECALL_MAX,
) -> list[Candidate]:
    """The memories relevant to the turn that are not always used, most relevant first (newer first on a tie:
    `candidates` come oldest first), at most `limit`. With `owner`, the user whose memories they are: their
    term index is kept for their next turn; without one, `reuse` is an index whose terms of the same texts
    are read rather than found again.

    `previous` and `reply` are the last exchange; `meaning` the turn's closeness to the memories, when there
    are embeddings.
    """
    others = [c for c in candidates if not c.always]
    weights = query_weights(message, previous, reply)
    scores = (term_index(owner, others) if owner is not None else TermIndex(others, reuse=reuse)).scores(weights)
    if meaning is not None and not is_about_something(message):
        meaning = None  # a greeting: nothing by meaning (and the last exchange's words still count)
    ranked = _totals(others, scores, meaning)
    ranked.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [item[2] for item in ranked[:limit]]


def _totals(
    others: list[Candidate], scores: Sequence[float], meaning: Meaning | None
) -> list[tuple[float, int, Candidate]]:
    """(total, position, candidate) of each candidate relevant by its words or its meaning: `candidates`
    come oldest first, so a later position is newer."""
    ranked: list[tuple[float, int, Candidate]] = []
    for position, (candidate, score) in enumerate(zip(others, scores, strict=True)):
        standing = meaning.standing(candidate.id) if meaning is not None else 0.0
        if score >= LEXICAL_FLOOR or standing >= MEANING_MARGIN:
            ranked.append((score + MEANING_WEIGHT * max(0.0, standing), position, candidate))
    return ranked


def always_used(candidates: Iterable[Candidate]) -> list[Candidate]:
    """The memories every turn carries: pinned first, then keyed preferences, oldest first within each."""
    chosen = [c for c in candidates if c.always]
    return sorted(chosen, key=lambda c: not c.pinned)  # sorted() is stable: the given order stays within each
