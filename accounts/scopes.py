"""Which scope a token needs for each part of the JSON API (SPEC §9), and what a token's program reads.

Apps name the scope their routes need when they load (`register_route_scope`, in their AppConfig): a
read (GET) needs `read`, any other method `write`. A token with every scope may do anything, as every
token could before scopes existed; a narrower one may call only the routes registered for its scopes
and read `/api/me` (who it acts for). Everything else (tokens, the account) answers 403 to it.

A token may also be limited to one project (`ApiToken.project_id`): it sees what a chat in that project
would, through the connected tools (MCP and /v1), which check the project on every request; the JSON API
answers it only `/api/me`. The app that owns projects names them here (`register_project_lister`).

Token activity: another app may set attributes on the tokens a list shows (`register_token_annotator`),
with a constant number of queries for the whole list: the memory app adds what each token read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from accounts.models import ApiToken
from core.registry import Registry

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


@dataclass(frozen=True)
class RouteScope:
    prefix: str
    read: str
    write: str


_route_scopes: dict[str, RouteScope] = {}


def register_route_scope(prefix: str, *, read: str, write: str) -> None:
    """Routes under `prefix` (e.g. "/api/memories") need `read` to read and `write` for anything else."""
    _route_scopes[prefix] = RouteScope(prefix, read, write)


def required_scope(path: str, method: str) -> str | None:
    """The scope a request to `path` needs, or None when only a token with every scope may make it."""
    for rule in _route_scopes.values():
        if path == rule.prefix or path.startswith(rule.prefix.rstrip("/") + "/"):
            return rule.read if method.upper() in READ_METHODS else rule.write
    return None


def token_allows(token: ApiToken, path: str, method: str) -> bool:
    if token.has_full_access:
        return True
    if path.rstrip("/") == "/api/me" and method.upper() in READ_METHODS:
        return True
    if token.project_id is not None:
        return False
    scope = required_scope(path, method)
    return scope is not None and token.allows(scope)


# (user id) -> the user's projects, as (id, name) pairs.
ProjectLister = Callable[[int], list[tuple[int, str]]]
_project_listers: Registry[ProjectLister] = Registry("project lister")
register_project_lister = _project_listers.register


def project_choices(user_id: int) -> list[tuple[int, str]]:
    """The projects a token of this user may be limited to (none when no app has projects)."""
    return [choice for lister in _project_listers.entries() for choice in lister(user_id)]


TokenAnnotator = Callable[[list[ApiToken]], None]
_token_annotators: Registry[TokenAnnotator] = Registry("token annotator")
register_token_annotator = _token_annotators.register


def annotate_tokens(tokens: list[ApiToken]) -> list[ApiToken]:
    """`tokens`, annotated by every registered annotator (a failing one is logged and skipped)."""
    _token_annotators.each_logged(lambda annotator: annotator(tokens))
    return tokens
