"""The OpenAPI document tells the truth: requests generated from it, sent to the real app, get what it says.

Schemathesis reads /api/openapi.json from the app and, for every operation, generates requests (valid ones,
and invalid ones that break a documented limit), sends them through Django's real ASGI handler with a user's
bearer token, and fails the test on any 5xx, any status the operation does not document, any response
whose body, content type or headers do not match the document, any valid request refused for an
undocumented reason, any invalid request accepted, and a method the route lacks not answered 405 with
Allow. Seeded and bounded (EXAMPLES per operation); one pytest test per operation, so it runs on both
database passes like any other. The server-sent events of a turn, which a generated request does not ask
for, are checked event by event by a test of their own.

Half of the valid ids generated (the even ones) are aimed at the user's own objects, so routes answer their
2xx (and their 409s) and not only 404.
"""

from __future__ import annotations

import os
from typing import Any
from uuid import UUID

import pytest
import schemathesis
from django.apps import apps
from hypothesis import HealthCheck, settings
from schemathesis import checks

from accounts.services import api_token_create
from chat.llm.catalogue import default_chat_model
from chat.models import Conversation
from chat.services import conversation_create
from config.asgi import django_asgi_app
from tests.helpers import make_user

# A guard well above the time an operation takes (a few seconds), so a hang fails instead of stalling CI.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]

# Examples per operation; about a minute for the whole document on a quiet machine.
EXAMPLES = int(os.environ.get("MEMORA_CONFORMANCE_EXAMPLES", "20"))

# What a valid request may get besides success: the documented refusals that depend on state, not on input.
ACCEPTED = ["2xx", "404", "409", "429"]
CONFIG = schemathesis.Config.from_dict(
    {
        "seed": 24,
        "max-stream-events": 1000,  # a turn's whole event stream, to its `done`
        "checks": {
            "positive_data_acceptance": {"expected-statuses": ACCEPTED},
        },
        "operations": [
            {
                # A token's expiry must be in the future, which JSON Schema cannot say: its 400 is documented;
                # and a token-authenticated request must also give the account's password (else 403).
                "include-path": "/api/tokens",
                "include-method": "POST",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400", "403"]}},
            },
            {
                # Tokens are revoked from the signed-in session only: a token's request answers 403.
                "include-path": "/api/tokens/{token_id}",
                "include-method": "DELETE",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "403"]}},
            },
            {
                # The account goes only with its password, which a generator cannot know: 403.
                "include-path": "/api/me",
                "include-method": "DELETE",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "403"]}},
            },
            {
                # A blank query (only spaces) says nothing to look for: 400, documented.
                "include-path": "/api/search",
                "include-method": "GET",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}},
            },
            {
                # An end date must be in the future, which JSON Schema cannot say: its 400 is documented.
                "include-path": "/api/memories/{memory_id}",
                "include-method": "PATCH",
                "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}},
            },
        ],
    }
)
CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
    checks.positive_data_acceptance,
    checks.negative_data_rejection,
    checks.unsupported_method,
    checks.allow_header_conformance,
]


class Account:
    """The user the requests act as, with objects of theirs to aim ids at."""

    def __init__(self) -> None:
        self.user = make_user(username="conformance")
        self.token, self.plain_token = api_token_create(user=self.user, name="conformance")
        self.conversation = conversation_create(user=self.user, title="Aimed at")
        self.spare_token, _ = api_token_create(user=self.user, name="spare")
        self.memory_id = None
        if apps.is_installed("memory"):  # chat and accounts are also tested without it
            from memory.services import memory_add

            self.memory_id = memory_add(user=self.user, content="Prefers small phones.").pk

    def aim(self, case: Any) -> None:
        if case.meta is None or not case.meta.generation.mode.is_positive:
            return  # an id breaking a documented limit stays as generated: it must be refused
        params = case.path_parameters or {}
        if "conversation_id" in params and _even(params["conversation_id"]):
            params["conversation_id"] = str(self._conversation().pk)
        if "memory_id" in params and _even(params["memory_id"]):
            params["memory_id"] = self.memory_id
        # A conversation's model must be one the server offers (GET /api/models), which JSON Schema cannot say.
        if isinstance(case.body, dict) and "model" in case.body and "conversation" in case.operation.path:
            case.body["model"] = default_chat_model()
        # The token the requests authenticate with is never revoked by one of them.
        if "token_id" in params and (params["token_id"] == self.token.pk or _even(params["token_id"])):
            params["token_id"] = self.spare_token.pk

    def _conversation(self) -> Conversation:
        # A DELETE among the examples may have removed it: then a new one stands in.
        if not Conversation.objects.filter(pk=self.conversation.pk).exists():
            self.conversation = conversation_create(user=self.user, title="Aimed at")
        return self.conversation


def _even(value: Any) -> bool:
    try:
        number = UUID(str(value)).int if not isinstance(value, int) else value
    except ValueError:
        return False
    return number % 2 == 0


# The document as the app serves it, read through Django's real ASGI handler (the one `make run` serves);
# one test per operation is generated from it.
# /mcp is described, not served by Django: its JSON-RPC is tested with the MCP client (tests/connect/).
schema = schemathesis.openapi.from_asgi("/api/openapi.json", django_asgi_app, config=CONFIG).exclude(path_regex="^/mcp")


@pytest.fixture
def account(db: None) -> Account:
    return Account()


@schema.parametrize()
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_every_answer_is_in_the_document(case: Any, account: Account) -> None:
    account.aim(case)
    case.call_and_validate(headers={"Authorization": f"Bearer {account.plain_token}"}, checks=CHECKS)


def test_the_check_fails_on_a_status_the_document_does_not_list(account: Account) -> None:
    """The test above is not vacuous: an answer the document does not list fails it."""
    import requests
    from schemathesis.core.failures import FailureGroup

    case = schema["/api/me"]["GET"].Case()
    response = case.call(headers={"Authorization": f"Bearer {account.plain_token}"})
    assert response.status_code == 200
    case.validate_response(response, checks=CHECKS)  # as the app answers: fine

    teapot = requests.Response()
    teapot.status_code, teapot._content = 418, b'{"detail": "I am a teapot."}'
    teapot.url = str(response.request.url)
    teapot.headers["Content-Type"] = "application/json"
    teapot.request = response.request  # type: ignore[assignment]
    with pytest.raises(FailureGroup, match="Undocumented status code"):
        case.validate_response(teapot, checks=CHECKS)


def test_the_server_sent_events_of_a_turn_match_the_document(account: Account) -> None:
    operation = schema["/api/conversations/{conversation_id}/messages"]["POST"]
    case = operation.Case(
        path_parameters={"conversation_id": str(account.conversation.pk)},
        body={"content": "I like small phones."},
        media_type="application/json",
    )
    headers = {"Authorization": f"Bearer {account.plain_token}", "Accept": "text/event-stream"}
    response = case.call(headers=headers)
    assert response.status_code == 200 and response.headers["content-type"][0].startswith("text/event-stream")
    case.validate_response(response, checks=CHECKS, headers=headers)
    assert b"event: done" in response.content
