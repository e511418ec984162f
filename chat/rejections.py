"""Why a turn cannot start (chat.services, chat.limits): each a TurnRejected with the HTTP status to answer.

Nothing has been written when one is raised. The API answers it with its status and `detail` (and
Retry-After when it has one, config/api.py); the chat socket shows it in place.
"""

from __future__ import annotations

from django.utils.translation import gettext as _
from django.utils.translation import ngettext


class TurnRejected(Exception):
    """A turn that cannot start. Nothing has been written. `status` is the HTTP status to answer."""

    status = 400
    retry_after: int | None = None  # seconds, sent as Retry-After when set


class InvalidMessage(TurnRejected):
    """The message is not a string, empty or too long (the text says which)."""


class UnknownModel(TurnRejected):
    """A chat model that is not offered (chat.llm.catalogue): the sentence lists the ones that are."""

    status = 422

    def __init__(self, model: str, offered: list[str]) -> None:
        super().__init__(
            _("Unknown model “%(model)s”. Choose one of: %(models)s.") % {"model": model, "models": ", ".join(offered)}
        )
        self.offered = offered


class ConversationBusy(TurnRejected):
    status = 409

    def __init__(self) -> None:
        super().__init__(_("Another reply is still being written in this conversation. Wait for it or stop it."))


class ConversationGone(TurnRejected):
    status = 404

    def __init__(self) -> None:
        super().__init__(_("This conversation no longer exists; it may have been deleted in another window."))


class RunSlotsFull(TurnRejected):
    status = 429

    def __init__(self, slots: int) -> None:
        super().__init__(
            ngettext(
                "You already have %(count)d reply being written. Wait for it to finish.",
                "You already have %(count)d replies being written. Wait for one to finish.",
                slots,
            )
            % {"count": slots}
        )


class NotEditable(TurnRejected):
    """Only the last message the user sent can be edited (chat.edits)."""

    status = 409


class NothingToRetry(TurnRejected):
    status = 409

    def __init__(self, text: str = "") -> None:
        super().__init__(text or _("Only the latest reply can be retried, and only when it failed or was stopped."))


class TooManyTurns(TurnRejected):
    status = 429

    def __init__(self, limit: int, retry_after: int, *, per_address: bool = False) -> None:
        if per_address:
            text = _("Too many messages from this address: the limit is %(limit)s a minute. Wait %(seconds)s s.")
        else:
            text = _("Too many messages: the limit is %(limit)s a minute. Wait %(seconds)s s, then send again.")
        super().__init__(text % {"limit": limit, "seconds": retry_after})
        self.retry_after = retry_after


class AccessEnded(TurnRejected):
    """The user is no longer active (deactivated, deleted) or the session the socket was opened with has
    ended (logout, password change): no turn starts, and the socket closes."""

    status = 401

    def __init__(self) -> None:
        super().__init__(_("Your session has ended. Sign in again to continue."))
