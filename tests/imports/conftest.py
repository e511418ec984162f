from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from imports import runner


@pytest.fixture(autouse=True)
def _import_dir(settings: Any, tmp_path: Any) -> None:
    settings.IMPORT_DIR = tmp_path / "imports"


@pytest.fixture
def upload(api_client: Any) -> Callable[..., Any]:
    """POST an export to /api/imports; the response."""

    def send(data: bytes, name: str = "export.zip", **fields: Any) -> Any:
        return api_client.post("/api/imports", {"file": SimpleUploadedFile(name, data), **fields})

    return send


@pytest.fixture
def run_import() -> Callable[[int], str]:
    """What the worker does with a queued import (the task's body), run here."""
    return lambda import_id: runner.import_run(import_id=import_id)
