from __future__ import annotations

import hashlib
import secrets
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.sessions.models import Session
from django.db import connection, transaction
from django.utils import timezone
from django.utils.translation import gettext
from django.utils.translation import gettext as _

from accounts import data
from accounts.models import ALL_SCOPES, ApiToken, User
from accounts.scopes import project_choices
from accounts.throttle import password_check
from core.sql import column, columns, instance, table

TOKEN_PREFIX = "mem_"
LAST_USED_PRECISION = timedelta(minutes=1)
TOKEN_NAME_MAX = 100


class TokenRejected(ValueError):
    """A token that cannot be created as asked; nothing was written. `status` is the HTTP status to answer."""

    status = 400


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class ProjectNotFound(TokenRejected):
    status = 404


@transaction.atomic
def api_token_create(
    *,
    user: User,
    name: str = "",
    expires_at: datetime | None = None,
    scopes: list[str] | None = None,
    project_id: int | None = None,
) -> tuple[ApiToken, str]:
    """Create a token for `user`; returns the row and the plain token (never stored). Without `scopes`
    (None) the token may do everything, as every token could before scopes existed; with `project_id`
    (one of the user's projects, else 404) it sees only what a chat in that project would."""
    if project_id is not None and project_id not in {pk for pk, _name in project_choices(user.pk)}:
        raise ProjectNotFound(_("No such project."))
    scopes, name, expires_at = _token_scopes(scopes), _token_name(name), _token_expiry(expires_at)
    plain = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=plain[:10],
        digest=_digest(plain),
        expires_at=expires_at,
        scopes=scopes if scopes is not None else list(ALL_SCOPES),
        project_id=project_id,
    )
    return token, plain


def _token_name(name: str) -> str:
    name = " ".join(name.split())
    if len(name) > TOKEN_NAME_MAX or "\x00" in name:
        raise TokenRejected(
            _("The name must be at most %(limit)d characters of plain text.") % {"limit": TOKEN_NAME_MAX}
        )
    return name


def _token_scopes(scopes: list[str] | None) -> list[str] | None:
    """Known scopes in their canonical order; None (every scope) stays None."""
    if scopes is None:
        return None
    if not scopes or set(scopes) - set(ALL_SCOPES):
        raise TokenRejected(_("Choose at least one scope among %(scopes)s.") % {"scopes": ", ".join(ALL_SCOPES)})
    return [scope for scope in ALL_SCOPES if scope in scopes]


def _token_expiry(expires_at: datetime | None) -> datetime | None:
    if expires_at is None:
        return None
    if timezone.is_naive(expires_at):
        expires_at = timezone.make_aware(expires_at, UTC)  # documented: a time without a zone is UTC
    if expires_at <= timezone.now():
        raise TokenRejected(_("The expiry must be in the future."))
    return expires_at


def api_token_authenticate(*, token: str) -> User | None:
    """The active user owning `token` (not expired), or None. Records when the token was last used."""
    row = api_token_check(token=token)
    return row.user if row is not None else None


def api_token_check(*, token: str, client: str = "") -> ApiToken | None:
    """The live token row (its user active, `user` loaded), or None; looked up again on every request, so
    a revoked token stops at once. Records when it was last used and, when named, by which program."""
    if not token or len(token) > 200:
        return None
    now = timezone.now()
    row = _token_with_user(_digest(token))
    if row is None or not row.user.is_active or (row.expires_at is not None and row.expires_at <= now):
        return None
    client = " ".join(client.split())[:100]
    # Recorded at most once a minute: a busy client must not turn every read into a write.
    changes: dict[str, object] = {}
    if row.last_used_at is None or now - row.last_used_at > LAST_USED_PRECISION:
        changes["last_used_at"] = row.last_used_at = now
    if client and client != row.last_client:
        changes["last_client"] = row.last_client = client
    if changes:
        ApiToken.objects.filter(pk=row.pk).update(**changes)
    return row


def _token_with_user(digest: str) -> ApiToken | None:
    """The token with this digest, its user loaded, in one query. In SQL rather than the ORM: this is on every
    API request, and Django building the join cost several times running it."""
    token_columns = len(ApiToken._meta.concrete_fields)
    sql = (
        f"SELECT {columns(ApiToken, 't')}, {columns(User, 'u')} FROM {table(ApiToken)} t"
        f" JOIN {table(User)} u ON u.{column(User, 'id')} = t.{column(ApiToken, 'user')}"
        f" WHERE t.{column(ApiToken, 'digest')} = %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [digest])
        found = cursor.fetchone()
    if found is None:
        return None
    row = instance(ApiToken, found[:token_columns])
    row.user = instance(User, found[token_columns:])
    return row


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


def user_set_memory_review(*, user: User, review: str) -> User:
    """Which learned memories wait as suggestions: auto (none), sensitive (default), all."""
    user.memory_review = User.MemoryReview(review)
    user.save(update_fields=["memory_review"])
    return user


class AccountDeleteRefused(ValueError):
    """The password did not match: nothing was deleted."""

    status = 403


def user_sessions_delete(*, user_id: int) -> int:
    """Delete the user's stored sessions (the database session backend keeps the user id in an encoded
    blob, so each live session is decoded once); returns how many went."""
    mine = []
    for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator(chunk_size=500):
        if str(session.get_decoded().get("_auth_user_id")) == str(user_id):
            mine.append(session.pk)
    deleted, _ = Session.objects.filter(pk__in=mine).delete()
    return deleted


@transaction.atomic
def account_delete(*, user: User, password: str, address: str) -> None:
    """Delete the account and every row holding its words or memories, in one transaction.

    Each app's eraser (accounts.data) runs first, then the user row goes with every row that has a
    ForeignKey to it (tokens, conversations, messages, memories, runs, claims). A wrong password raises
    AccountDeleteRefused and deletes nothing; too many from `address` raise throttle.PasswordChecksThrottled.
    Open sockets are closed after commit by chat's eraser.
    """
    if not password_check(user=user, password=password, address=address):
        raise AccountDeleteRefused(gettext("The password is not correct; nothing was deleted."))
    account_erase(user=user)


@transaction.atomic
def account_erase(*, user: User) -> None:
    """Delete the account and everything in it (account_delete after its password check; the admin's
    delete of a user)."""
    locked = User.objects.select_for_update().filter(pk=user.pk).first()
    if locked is None:
        return
    for eraser in data.erasers():
        eraser(locked)
    ApiToken.objects.filter(user=locked).delete()
    user_sessions_delete(user_id=locked.pk)
    _login_records_delete(username=locked.get_username())
    locked.delete()


def _login_records_delete(*, username: str) -> None:
    """django-axes' records of failed sign-ins name the username; they go with the account."""
    from django.apps import apps

    if not apps.is_installed("axes"):
        return
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog

    for model in (AccessAttempt, AccessFailureLog, AccessLog):
        model.objects.filter(username=username).delete()
