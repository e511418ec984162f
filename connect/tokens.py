"""A connected tool's token: read from the `Authorization: Bearer …` header on every request (so a revoked
token stops at once), held to its scopes, and counted against its address when wrong (accounts.throttle,
as the JSON API counts it)."""

from __future__ import annotations

from dataclasses import dataclass

from accounts.models import ApiToken
from accounts.services import api_token_check
from accounts.throttle import bearer_failures
from chat.models import Project
from memory.scopes import ScopeView

CLIENT_MAX = 100


@dataclass(frozen=True)
class Refusal:
    """Why a request was not let in: 401 (no or bad token), 429 (too many bad tokens from the address)."""

    status: int
    retry_after: int | None = None


def bearer(header: str | None) -> str:
    """The token in an Authorization header's value, or ""."""
    scheme, _, value = (header or "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else ""


def token_authenticate(*, header: str | None, address: str, client: str = "") -> ApiToken | Refusal:
    """The live token the header names (its `user` loaded), or why not."""
    row = api_token_check(token=bearer(header), client=client_name(client))
    if row is not None and project_alive(row):
        return row
    retry_after = bearer_failures.retry_after(address)
    if retry_after is not None:
        return Refusal(429, retry_after)
    bearer_failures.record(address)
    return Refusal(401)


def token_reload(token_id: int) -> ApiToken | None:
    """The token again, as it is now (None once revoked or expired, its user deactivated or its project gone)."""
    row = ApiToken.objects.select_related("user").filter(pk=token_id).first()
    if row is None or row.is_expired or not row.user.is_active or not project_alive(row):
        return None
    return row


def project_alive(token: ApiToken) -> bool:
    """False for a token limited to a project that no longer exists: it authenticates nothing (never more)."""
    return token.project_id is None or Project.objects.filter(owner_id=token.user_id, pk=token.project_id).exists()


def token_view(token: ApiToken) -> ScopeView:
    """What the token sees: a chat in its project's scope, or (no project) a chat outside projects."""
    if token.project_id is None:
        return ScopeView()
    return ScopeView.of(Project.objects.get(owner_id=token.user_id, pk=token.project_id))


def client_name(value: str | None) -> str:
    """A program's name as the log keeps it: one line, at most CLIENT_MAX characters."""
    return " ".join((value or "").split())[:CLIENT_MAX]
