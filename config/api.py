"""The JSON API: one NinjaAPI combining each app's router (OpenAPI docs at /api/docs).

Bad input answers 4xx with a JSON `detail` and writes nothing (SPEC §5): text the databases cannot
store (lone UTF-16 surrogates) is refused while parsing, a body over DATA_UPLOAD_MAX_MEMORY_SIZE
answers 413, unknown fields 422 (the input schemas forbid extras), a failed token 401, and a throttled
address or user 429 with Retry-After. A service's domain error (a rejected turn, memory write or token)
is translated here, once, into its status and `detail`. Every one of them is an ErrorOut
(core/api_errors.py); what ninja itself answers (validation errors, 404) is reshaped here to match,
and core.middleware.ApiErrorMiddleware does the same for Django's own failures under /api/.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import wraps
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse
from django.utils.formats import number_format
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.parser import Parser

from accounts.api import router as accounts_router
from accounts.auth import TooManyAuthFailures, api_auth
from accounts.services import LanguageRejected, TokenRejected
from accounts.throttle import PasswordChecksThrottled
from chat.api import models_router as chat_models_router
from chat.api import router as chat_router
from chat.project_api import router as project_router
from chat.projects import ProjectRejected
from chat.search.api import router as search_router
from chat.services import TurnRejected
from core.api_errors import DESCRIPTIONS, PATTERN_MESSAGES, RETRY_AFTER, error_response
from usage.api import router as usage_router

if TYPE_CHECKING:
    from memory.services import MemoryRejected


class UnstorableText(ValueError):
    """A JSON string no database can store: a lone UTF-16 surrogate (e.g. "\\ud800")."""


def _check_text(value: Any, where: str = "body") -> None:
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise UnstorableText(
                _("The request %(where)s contains a lone UTF-16 surrogate (like \\ud800), which is not valid text.")
                % {"where": where}
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key, where)
            _check_text(item, f"field {key!r}" if isinstance(key, str) and where == "body" else where)
    elif isinstance(value, list):
        for item in value:
            _check_text(item, where)


class StrictJSONParser(Parser):
    def parse_body(self, request: HttpRequest) -> Any:
        data = json.loads(request.body)
        _check_text(data)
        return data


def docs_access(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """/api/docs and /api/openapi.json for anyone when API_DOCS_PUBLIC (default: only in debug), else for
    signed-in users: the page sends others to sign in, the document answers 401."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if settings.API_DOCS_PUBLIC or request.user.is_authenticated:
            return view(request, *args, **kwargs)
        if request.path_info.endswith(".json"):
            return error_response(401, _("Sign in to read the API's description."))
        return redirect_to_login(request.get_full_path())

    return guarded


class MemoraAPI(NinjaAPI):
    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None
    ) -> OpenAPISchema:
        """The document ninja builds from the routes, with what every error response shares: what each status
        means (unless the route says it itself) and the Retry-After header of a 429."""
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        if apps.is_installed("connect"):  # /v1 and /mcp, which answer OpenAI's and MCP's own shapes
            from connect.openapi import paths

            schema["paths"].update(paths())
        for operations in schema["paths"].values():
            for operation in operations.values():
                for status, response in operation["responses"].items():
                    code = int(status)
                    if code in DESCRIPTIONS and response.get("description") == HTTPStatus(code).phrase:
                        response["description"] = DESCRIPTIONS[code]
                    if code == 429:
                        response.setdefault("headers", {}).update(RETRY_AFTER)
        return schema


api = MemoraAPI(
    title="Memora API",
    version="1.0",
    description=(
        'Every error (4xx and 5xx) answers one JSON shape, `ErrorOut`: `{"detail": "…"}`, with `errors` '
        "(each refused field: `loc`, `msg`, `type`) beside it when a request failed validation (422). "
        "Each operation lists every status it answers and every limit it enforces."
    ),
    auth=api_auth,
    urls_namespace="api",
    parser=StrictJSONParser(),
    docs_decorator=docs_access,
)
api.add_router("/", accounts_router)
api.add_router("/conversations", chat_router)
api.add_router("/models", chat_models_router)
api.add_router("/projects", project_router)
api.add_router("/search", search_router)
api.add_router("/me/usage", usage_router)


# Django Ninja's own words (its stock errors), in the request's language.
STOCK_DETAILS = {
    "Unauthorized": gettext_lazy("Unauthorized"),
    "Forbidden": gettext_lazy("Forbidden"),
    "Too many requests.": gettext_lazy("Too many requests."),
    "Cannot parse request body": gettext_lazy("Cannot parse request body"),
}


@api.exception_handler(Http404)
def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    # Missing and not yours look the same (no detail from the lookup).
    return api.create_response(request, {"detail": _("Not Found")}, status=404)


@api.exception_handler(HttpError)
def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # Ninja wraps every body-parsing failure in a 400 "Cannot parse request body"; say what it was.
    cause = exc.__cause__
    if isinstance(cause, RequestDataTooBig):
        return body_too_big(request, cause)
    if isinstance(cause, UnstorableText):
        return api.create_response(request, {"detail": str(cause)}, status=400)
    detail = str(exc)
    detail = str(STOCK_DETAILS.get(detail, detail))
    response = api.create_response(request, {"detail": detail}, status=exc.status_code)
    if isinstance(exc, TooManyAuthFailures):
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(TurnRejected)
@api.exception_handler(ProjectRejected)
@api.exception_handler(PasswordChecksThrottled)
@api.exception_handler(TokenRejected)
@api.exception_handler(LanguageRejected)
def domain_error(
    request: HttpRequest,
    exc: TurnRejected | ProjectRejected | MemoryRejected | TokenRejected | LanguageRejected | PasswordChecksThrottled,
) -> HttpResponse:
    """A service refused the request and wrote nothing: its status, its message, and Retry-After when it has one."""
    response = api.create_response(request, {"detail": str(exc)}, status=exc.status)
    retry_after = getattr(exc, "retry_after", None)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


if apps.is_installed("memory"):  # chat works without it (config/settings/test_without_memory.py)
    from memory.api import router as memory_router
    from memory.consolidation.api import router as consolidation_router
    from memory.services import MemoryRejected

    api.add_router("/memories", consolidation_router)  # before memory_router: "/proposals" is not a memory id
    api.add_router("/memories", memory_router)
    api.exception_handler(MemoryRejected)(domain_error)

if apps.is_installed("imports"):
    from imports.api import router as imports_router
    from imports.services import ImportRejected

    api.add_router("/imports", imports_router)
    api.exception_handler(ImportRejected)(domain_error)


@api.exception_handler(RequestDataTooBig)
def body_too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    limit = number_format(settings.DATA_UPLOAD_MAX_MEMORY_SIZE, force_grouping=True)
    detail = _("The request body is over the limit of %(limit)s bytes.") % {"limit": limit}
    return api.create_response(request, {"detail": detail}, status=413)


@api.exception_handler(ValidationError)
def invalid_input(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    """422 in the one error shape: a sentence naming each refused field, and the fields in `errors`."""
    errors = [_field_error(error) for error in exc.errors]
    where = "; ".join(f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}" for error in errors)
    detail = _("Invalid input: %(errors)s") % {"errors": where}
    return api.create_response(request, {"detail": detail, "errors": errors}, status=422)


def _field_error(error: dict[str, Any]) -> dict[str, Any]:
    # ninja's loc starts with where the value came from ("body", "query", "path"); the payload's parameter
    # name after "body" says nothing to a client and is left out.
    loc = list(error.get("loc", ()))
    if len(loc) > 1 and loc[0] == "body" and loc[1] == "payload":
        del loc[1]
    message = str(error.get("msg", ""))
    if error.get("type") == "string_pattern_mismatch":
        message = str(PATTERN_MESSAGES.get(str((error.get("ctx") or {}).get("pattern")), message))
    return {"loc": loc, "msg": message, "type": str(error.get("type", ""))}
