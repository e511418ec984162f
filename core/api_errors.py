"""The JSON API's one error shape, and the error responses routes declare (SPEC §8, "API contract").

Every 4xx and 5xx under /api/ answers `ErrorOut`: `{"detail": "…"}`, plus `errors` (one entry per
refused field) when a request failed validation. Routes declare every status they answer by merging
the shared groups below into their `response={…}`, so the OpenAPI document lists them:

    from core.api_errors import AUTH_ERRORS, BODY_ERRORS, NOT_FOUND, WRITE_ERRORS

    @router.get("/{thing_id}", response={200: ThingOut, **AUTH_ERRORS, **NOT_FOUND, **PARAM_ERRORS})
    @router.post("", response={201: ThingOut, **WRITE_ERRORS, **BODY_ERRORS, 409: ErrorOut})

A route's own domain errors (a 400 or 409 a service raises) are added beside them with `ErrorOut`.
`tests/config/test_openapi.py` checks that every operation carries the groups its shape calls for, and
`tests/config/test_openapi_conformance.py` sends generated requests to check the document tells the truth.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.translation import gettext_lazy
from ninja import Field, Schema

# Ids and offsets are bounded so that no request reaches the database with an integer it cannot hold
# (SQLite and PostgreSQL both stop at a signed 64-bit integer; an offset past this is no page anyway).
ID_MAX = 2**63 - 1
OFFSET_MAX = 2**31 - 1


def optional_id(description: str) -> Any:
    """A body field naming a row by id, which may be null or left out (none)."""
    return Field(None, ge=1, le=ID_MAX, description=description)


# A string with something besides white space in it (and no NUL, which PostgreSQL cannot store).
NOT_BLANK = r"^[^\x00]*[^\s\x00][^\x00]*$"
NO_NUL = r"^[^\x00]*$"
# What a refused pattern means, for the validation error's message (the pattern itself says little to a person).
PATTERN_MESSAGES = {
    NOT_BLANK: gettext_lazy("Must not be blank, and must not contain a NUL character (\\u0000)."),
    NO_NUL: gettext_lazy("Must not contain a NUL character (\\u0000)."),
}


class FieldError(Schema):
    """One refused field of a request that failed validation."""

    loc: list[str | int] = Field(description='Where: e.g. ["body", "payload", "content"] or ["query", "limit"].')
    msg: str = Field(description="What is wrong with it.")
    type: str = Field(description='A machine-readable kind, e.g. "string_too_long" or "missing".')


class ErrorOut(Schema):
    """What every 4xx and 5xx of the API answers."""

    detail: str = Field(description="What went wrong, in a sentence for a person.")
    errors: list[FieldError] | None = Field(None, description="Only for validation errors (422): each refused field.")


def _errors(*statuses: int) -> dict[int, type[ErrorOut]]:
    return dict.fromkeys(statuses, ErrorOut)


# Every route behind the API's authentication: a missing, wrong, revoked or expired token or session
# (401), a token whose scopes do not allow the request (403), and an address throttled after too many
# failed tokens (429, with Retry-After).
AUTH_ERRORS = _errors(401, 403, 429)
# Every POST, PATCH and DELETE: the same (a session request without its CSRF token is a 403 too).
WRITE_ERRORS = AUTH_ERRORS
# A route that reaches something by id: a missing id and another user's answer the same 404.
NOT_FOUND = _errors(404)
# A route with a path or query parameter: a value outside its documented limits (422).
PARAM_ERRORS = _errors(422)
# A route that reads a JSON body: not JSON or not storable text (400), over DATA_UPLOAD_MAX_MEMORY_SIZE
# (413), a field missing, unknown or outside its limits (422).
BODY_ERRORS = _errors(400, 413, 422)

# What each status means, in the OpenAPI document (config/api.py puts these on every operation).
DESCRIPTIONS = {
    400: "The request was refused: the body is not JSON or not storable text, or a rule of the route says no.",
    401: "Missing, invalid, revoked or expired token, or no signed-in session.",
    403: "A token whose scopes do not allow the request, or a request by session without its CSRF token (X-CSRFToken).",
    404: "No such object for this user (another user's id answers the same).",
    409: "The request conflicts with the current state (the detail says which).",
    413: "The request body is too large.",
    422: "A parameter or field is missing, unknown or outside its documented limits; `errors` lists each.",
    429: "Too many requests; `Retry-After` says how many seconds to wait when it is known.",
    502: "The model provider failed while writing the reply.",
}

# Header documentation shared by the responses that send them.
RETRY_AFTER = {
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "schema": {"type": "integer", "minimum": 0},
    }
}


def error_response(status: int, detail: str, **extra: Any) -> HttpResponse:
    """An ErrorOut answer, for code that answers outside a ninja route (middleware)."""
    return JsonResponse({"detail": detail, **extra}, status=status, json_dumps_params={"ensure_ascii": False})


def is_api_request(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")
