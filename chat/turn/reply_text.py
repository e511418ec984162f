"""The reply's text as it arrives, made storable and kept within CHAT_REPLY_MAX_CHARS.

A provider may send a lone UTF-16 surrogate ("\\ud83d" without its pair: JSON allows it, no database
stores it); a save with one fails and would leave the reply `streaming`. A pair split across two
chunks is joined again, and what is still alone is replaced by U+FFFD. A reply longer than
CHAT_REPLY_MAX_CHARS (a provider that never stops) ends there: the text up to the limit is kept, and
ReplyTooLong (an LLMError) ends the turn with a note saying so.
"""

from __future__ import annotations

from django.conf import settings
from django.utils.formats import number_format
from django.utils.translation import gettext as _

from chat.llm import LLMError


class ReplyTooLong(LLMError):
    pass


def repaired(text: str) -> str:
    """`text` with surrogate pairs joined and lone surrogates replaced by U+FFFD."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class ReplyText:
    """Cleans each piece of a turn's reply before it is shown or saved."""

    def __init__(self) -> None:
        self.length = 0
        self.full = False  # the reply reached CHAT_REPLY_MAX_CHARS: the turn ends
        self._held = ""  # a high surrogate at the end of a piece, waiting for its pair

    def piece(self, text: str) -> str:
        """The piece as it may be shown and saved, cut where the reply reaches its limit."""
        text, self._held = self._held + text, ""
        if text and "\ud800" <= text[-1] <= "\udbff":
            text, self._held = text[:-1], text[-1]
        text = repaired(text)
        room = max(0, int(settings.CHAT_REPLY_MAX_CHARS) - self.length)
        if len(text) >= room:
            text, self.full = text[:room], True
        self.length += len(text)
        return text

    @staticmethod
    def too_long() -> ReplyTooLong:
        limit = number_format(int(settings.CHAT_REPLY_MAX_CHARS), force_grouping=True)
        return ReplyTooLong(
            _("The reply reached the %(limit)s-character limit and ends there.") % {"limit": limit}, kind="too_long"
        )
