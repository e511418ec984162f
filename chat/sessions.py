"""Open chat sockets end with the session that opened them: on logout and on a password change, every
socket of the user is closed through the channel layer's per-user group (chat.push.user_group).

With Redis (REDIS_URL) this reaches every web process; on the embedded in-memory layer, the sockets of
the process that handled the logout (the only one, in a development run). With the channel layer down
the message is lost (chat.push logs it), and logging out still works: a socket re-checks its session
before every turn it starts (chat.consumers).
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from chat import push


def user_sockets_close(*, user_id: int) -> None:
    """Close every open chat socket of the user, once the current transaction commits."""
    transaction.on_commit(lambda: push.send_event({"type": "session.close"}, user_id=user_id))


def on_logged_out(sender: Any, request: Any, user: Any, **kwargs: Any) -> None:
    if user is not None and user.pk is not None:
        user_sockets_close(user_id=user.pk)


def on_password_changed(sender: Any, user: Any, **kwargs: Any) -> None:
    user_sockets_close(user_id=user.pk)
