from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from accounts.models import ApiToken, User

TOKEN_PREFIX = "mem_"
LAST_USED_PRECISION = timedelta(minutes=1)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def api_token_create(*, user: User, name: str = "") -> tuple[ApiToken, str]:
    """Create a token for `user`; returns the row and the plain token (never stored)."""
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(user=user, name=name, prefix=plain[:10], digest=_digest(plain))
    return token, plain


def api_token_authenticate(*, token: str) -> User | None:
    """The active user owning `token`, or None. Records when the token was last used."""
    if not token or len(token) > 200:
        return None
    row = ApiToken.objects.select_related("user").filter(digest=_digest(token)).first()
    if row is None or not row.user.is_active:
        return None
    now = timezone.now()
    # Recorded at most once a minute: a busy client must not turn every read into a write.
    if row.last_used_at is None or now - row.last_used_at > LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user


@transaction.atomic
def user_set_memory_enabled(*, user: User, enabled: bool) -> User:
    user.memory_enabled = enabled
    user.save(update_fields=["memory_enabled"])
    return user
