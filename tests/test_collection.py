"""How the suite is collected: every test has an id of its own, which parallel workers (pytest-xdist) run
tests by, so two tests sharing one would run as one."""

from __future__ import annotations

from collections import Counter

import pytest

OPERATIONS_TEST = "test_every_answer_is_in_the_document"  # tests/config/test_openapi_conformance.py


def test_every_operation_generated_from_the_openapi_document_has_an_id_of_its_own(
    request: pytest.FixtureRequest,
) -> None:
    ids = [item.nodeid for item in request.session.items if getattr(item, "originalname", "") == OPERATIONS_TEST]
    if not ids:
        pytest.skip("the operations' tests are not in this run")
    assert [nodeid for nodeid, n in Counter(ids).items() if n > 1] == []
    assert all(nodeid.endswith("]") for nodeid in ids), ids[:3]  # `…[GET /api/me]`: the operation in the id
