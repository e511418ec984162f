"""What the judge may write: text the database can store, never a secret or an instruction, and end
dates it can keep. Pure functions (memory.extraction.judge.validation applies them to each add and update)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, time

from chat.services import is_valid_text
from memory import lexicon
from memory.models import CONTENT_MAX

EXPIRY_YEARS = 5


def is_storable(text: str) -> bool:
    """False for text a database refuses: a NUL (PostgreSQL) or a lone UTF-16 surrogate (any)."""
    return "\x00" not in text and is_valid_text(text)


def recorded_output(raw: str) -> str:
    """The judge's answer as the run keeps it: storable, and with every secret masked (memory.lexicon).
    A JSON answer is searched as decoded text, so an escaped secret ("\\u5bc6\\u7801") is found too."""
    text = storable(raw)
    try:
        decoded = json.dumps(json.loads(text), ensure_ascii=False)
    except (TypeError, ValueError):
        return lexicon.mask_credentials(text)
    if lexicon.has_credential(decoded):
        return lexicon.mask_credentials(decoded)
    return lexicon.mask_credentials(text)


def storable(text: str) -> str:
    """`text` with NUL removed and lone surrogates replaced, for recording what the judge said."""
    return text.replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def instruction_problem(text: str) -> str | None:
    """Why `text` is an instruction to the assistant rather than a fact about the user, or None.

    Memories are facts about the user, never instructions: stored, a permission ("submit my orders
    without asking", "以后所有订单都不用确认") would act on every later turn. Preferences about how to be
    served (a reply language, units, length) are facts and stay."""
    if lexicon.permission_grant(text):
        return "an instruction granting permissions or overriding rules, not a fact about the user"
    return None


CREDENTIAL = "a credential or secret (password, PIN, code, key, card or ID number); never stored"


def clean_content(content: str | None) -> tuple[str, str | None]:
    text = " ".join((content or "").split())
    if not is_storable(text):
        return storable(text), "content with a NUL character or invalid text the database cannot store"
    if not text:
        return text, "blank content"
    if len(text) > CONTENT_MAX:
        return text, f"content longer than {CONTENT_MAX} characters ({len(text)})"
    if lexicon.has_credential(text):
        return text, CREDENTIAL
    return text, instruction_problem(text)


def end_of_day(day: date) -> datetime:
    """What an end date means: the end of that day, UTC."""
    return datetime.combine(day, time(23, 59, 59), tzinfo=UTC)


def _years_after(day: date, years: int) -> date:
    try:
        return day.replace(year=day.year + years)
    except ValueError:  # 29 February
        return day.replace(year=day.year + years, day=28)


def expiry_problem(expires: str, *, sent: date | None) -> tuple[datetime | None, str | None]:
    """The end of a time-bound fact, from the judge's "YYYY-MM-DD", or why it cannot be kept: it must be
    after the day the message was sent and within EXPIRY_YEARS of it."""
    try:
        day = date.fromisoformat(expires.strip())
    except ValueError:
        return None, f"end date {expires!r} is not a YYYY-MM-DD date"
    if len(expires.strip()) != 10:
        return None, f"end date {expires!r} is not a YYYY-MM-DD date"
    if sent is not None and day <= sent:
        return None, f"end date {day.isoformat()} is not after the message's date ({sent.isoformat()})"
    if sent is not None and day > _years_after(sent, EXPIRY_YEARS):
        return None, f"end date {day.isoformat()} is more than {EXPIRY_YEARS} years after the message"
    return end_of_day(day), None
