"""Open chat sockets end with the session that opened them: on logout and on a password change, every
socket of the user is closed through the channel layer's per-user group (chat.extensions.user_group).

With Redis (REDIS_URL) this reaches every web process; on the embedded in-memory layer, the sockets of
the process that handled the logout (the only one, in a development run).
"""

from __future__ import annotations

import logging
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from chat.extensions import user_group

logger = logging.getLogger(__name__)


def user_sockets_close(*, user_id: int) -> None:
    """Close every open chat socket of the user, once the current transaction commits."""

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            async_to_sync(layer.group_send)(user_group(user_id), {"type": "session.close"})
        except Exception:  # a channel layer outage must not make logging out fail
            logger.exception("could not close the chat sockets of user %s", user_id)

    transaction.on_commit(send)


def on_logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if user is not None and user.pk is not None:
        user_sockets_close(user_id=user.pk)


def on_password_changed(sender: Any, user: Any, **kwargs: Any) -> None:
    user_sockets_close(user_id=user.pk)
