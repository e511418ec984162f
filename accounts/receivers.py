from __future__ import annotations

from typing import Any

from accounts.models import User
from accounts.services import api_tokens_revoke_all


def on_password_changed(sender: Any, user: User, **kwargs: Any) -> None:
    """A new password ends what the old one let in: the user's API tokens are revoked."""
    api_tokens_revoke_all(user=user)
