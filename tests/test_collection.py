"""How the suite is collected: every test has an id of its own, which parallel workers (pytest-xdist) run
tests by, so two tests sharing one would run as one."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_operation_generated_from_the_openapi_document_has_an_id_of_its_own() -> None:
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "tests/config/test_openapi_conformance.py"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    ids = [line for line in collected.splitlines() if "::test_every_answer_is_in_the_document" in line]
    assert len(ids) > 40  # one per operation
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    assert "tests/config/test_openapi_conformance.py::test_every_answer_is_in_the_document[GET /api/me]" in ids
