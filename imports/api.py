"""Import routes (SPEC §9, "Import"): upload (with a preview), list, read, start, learn, paste, remove.

Everything reached by id goes through selectors.import_get_for_user: another user's id is a 404. A refused
upload or action (services.ImportRejected) is answered by config/api.py with its status, nothing written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from ninja import File, Form, Path, Router
from ninja.files import UploadedFile
from ninja.responses import Status

from accounts.http import AuthedHttpRequest
from core.api_errors import AUTH_ERRORS, BODY_ERRORS, ID_MAX, NOT_FOUND, PARAM_ERRORS, WRITE_ERRORS, ErrorOut
from imports import learning, paste, selectors, services
from imports.models import ChatImport
from imports.schemas import ImportOut, PasteIn, RemovedOut, import_out

router = Router(tags=["imports"])

ImportId = Path(..., ge=1, le=ID_MAX)


def _out(row: ChatImport) -> dict[str, Any]:
    done = row.status == ChatImport.Status.DONE and row.kind == ChatImport.Kind.EXPORT
    return import_out(row, estimate=learning.learn_estimate(chat_import=row) if done else None)


@router.post(
    "",
    response={201: ImportOut, **WRITE_ERRORS, **BODY_ERRORS},
    summary="Upload a ChatGPT or Claude export (the ZIP or its conversations.json)",
    description=(
        "Multipart: `file`, optional `source` (`chatgpt` | `claude`; found from the file when left out or "
        ") and "
        "`dry_run`. The file is checked before the answer: not a ZIP or JSON, a ZIP with unsafe paths, a "
        "decompression bomb, no conversations.json, invalid UTF-8 or JSON, a truncated file or the wrong export "
        "answer 400; over IMPORT_MAX_BYTES (1 GiB by default, also the most the ZIP may expand to) 413. "
        "With `dry_run` the import waits as `previewed` (start it with `/start`); otherwise it is `queued` at once."
    ),
)
def import_create(
    request: AuthedHttpRequest,
    file: File[UploadedFile],
    source: Form[Literal["", "chatgpt", "claude"]] = "",
    dry_run: Form[bool] = False,
) -> Any:
    row = services.import_create(user=request.user, upload=file, source=source, dry_run=dry_run)
    return Status(201, _out(row))


@router.get("", response={200: list[ImportOut], **AUTH_ERRORS}, summary="List your imports, newest first")
def import_list(request: AuthedHttpRequest) -> Any:
    return [_out(row) for row in selectors.import_list(user=request.user)]


@router.post(
    "/paste",
    response={201: ImportOut, **WRITE_ERRORS, **BODY_ERRORS, 409: ErrorOut},
    summary="Paste what your old assistant remembers: each stated fact becomes a suggestion",
    description=(
        "Each line that states a fact becomes a suggestion (origin `imported`) citing the pasted text; "
        "credentials and permission grants are refused by code, line by line (`errors`). "
        "The same text pasted again answers 409."
    ),
)
def import_paste(request: AuthedHttpRequest, payload: PasteIn) -> Any:
    row = paste.paste_create(user=request.user, text=payload.text, source=payload.source)
    return Status(201, _out(row))


@router.get("/{import_id}", response={200: ImportOut, **AUTH_ERRORS, **NOT_FOUND, **PARAM_ERRORS})
def import_get(request: AuthedHttpRequest, import_id: int = ImportId) -> Any:
    return _out(selectors.import_get_for_user(user=request.user, import_id=import_id))


def _transition(
    path: str, service: Callable[..., ChatImport], *, name: str, status: int, conflict: bool = True, **doc: Any
) -> None:
    """Route `POST <path>`: the user's import (404 unless theirs) through `service`, answered as it is then
    with `status` (409 when `conflict` and the service refuses). `doc`: the OpenAPI summary and description."""
    errors: dict[int, Any] = {**WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS, **({409: ErrorOut} if conflict else {})}

    def view(request: AuthedHttpRequest, import_id: int = ImportId) -> Any:
        row = selectors.import_get_for_user(user=request.user, import_id=import_id)
        return Status(status, _out(service(user=request.user, chat_import=row)))

    view.__name__ = view.__qualname__ = name  # the operation's id, as a function of that name would have
    router.post(path, response={status: ImportOut, **errors}, **doc)(view)


_transition(
    "/{import_id}/start",
    services.import_start,
    name="import_start",
    status=202,
    summary="Start a previewed import (409 for any other status)",
)
_transition(
    "/{import_id}/learn",
    services.learn_start,
    name="import_learn",
    status=202,
    summary="Learn from the imported chats: the judge's proposals become suggestions",
    description="409 until the import is done, or with memory switched off. `learn.estimate` says what it costs.",
)
_transition(
    "/{import_id}/learn/stop",
    services.learn_stop,
    name="import_learn_stop",
    status=200,
    conflict=False,
    summary="Stop learning after the current batch",
)


@router.delete(
    "/{import_id}",
    response={200: RemovedOut, **WRITE_ERRORS, **NOT_FOUND, **PARAM_ERRORS},
    summary="Remove the import: its conversations, the projects it created and everything learned from it",
    description="A permanent delete: no copy of the imported text or of what was learned from it is kept.",
)
def import_remove(request: AuthedHttpRequest, import_id: int = ImportId) -> Any:
    row = selectors.import_get_for_user(user=request.user, import_id=import_id)
    return services.import_remove(user=request.user, chat_import=row)
