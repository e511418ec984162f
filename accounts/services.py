from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import ApiToken, User

TOKEN_PREFIX = "mem_"
LAST_USED_PRECISION = timedelta(minutes=1)
TOKEN_NAME_MAX = 100


class TokenRejected(ValueError):
    """A token that cannot be created as asked; nothing was written. `status` is the HTTP status to answer."""

    status = 400


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def api_token_create(*, user: User, name: str = "", expires_at: datetime | None = None) -> tuple[ApiToken, str]:
    """Create a token for `user`; returns the row and the plain token (never stored)."""
    name = " ".join(name.split())
    if len(name) > TOKEN_NAME_MAX or "\x00" in name:
        raise TokenRejected(
            _("The name must be at most %(limit)d characters of plain text.") % {"limit": TOKEN_NAME_MAX}
        )
    if expires_at is not None and expires_at <= timezone.now():
        raise TokenRejected(_("The expiry must be in the future."))
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user, name=name, prefix=plain[:10], digest=_digest(plain), expires_at=expires_at
    )
    return token, plain


def api_token_authenticate(*, token: str) -> User | None:
    """The active user owning `token` (not expired), or None. Records when the token was last used."""
    if not token or len(token) > 200:
        return None
    now = timezone.now()
    live = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    row = ApiToken.objects.select_related("user").filter(live, digest=_digest(token)).first()
    if row is None or not row.user.is_active:
        return None
    # Recorded at most once a minute: a busy client must not turn every read into a write.
    if row.last_used_at is None or now - row.last_used_at > LAST_USED_PRECISION:
        ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
    return row.user


@transaction.atomic
def api_token_revoke(*, token: ApiToken) -> None:
    """Delete the token: it authenticates nothing from now on."""
    token.delete()


@transaction.atomic
def api_tokens_revoke_all(*, user: User) -> int:
    """Revoke every token of `user` (on a password change); returns how many there were."""
    deleted, _ = ApiToken.objects.filter(user=user).delete()
    return deleted


class LanguageRejected(ValueError):
    """A language the interface does not speak; nothing was written."""

    status = 422


def language_choices() -> list[tuple[str, str]]:
    """The values `User.language` may take: "" (follow the browser), then settings.LANGUAGES."""
    return [("", _("Same as the browser")), *settings.LANGUAGES]


@transaction.atomic
def user_set_language(*, user: User, language: str) -> User:
    """The interface language: a code of settings.LANGUAGES, or "" to follow the browser."""
    if language not in {code for code, _name in language_choices()}:
        codes = ", ".join(f"“{code}”" for code, _name in language_choices())
        raise LanguageRejected(_("Unknown language. Use one of: %(codes)s.") % {"codes": codes})
    user.language = language
    user.save(update_fields=["language"])
    return user


@transaction.atomic
def user_set_memory_enabled(*, user: User, enabled: bool) -> User:
    user.memory_enabled = enabled
    user.save(update_fields=["memory_enabled"])
    return user
