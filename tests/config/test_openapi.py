"""The OpenAPI document's promises, operation by operation, and the one error shape of every failure."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from core.api_errors import ID_MAX, OFFSET_MAX

METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    from config.api import api

    return json.loads(json.dumps(api.get_openapi_schema()))  # as a client reads it: status codes are strings


# The connected tools' routes answer the shapes their clients read (OpenAI's, MCP's), not ErrorOut:
# tests/connect/ holds their own checks.
FOREIGN = ("/v1/", "/mcp")


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in METHODS and not path.startswith(FOREIGN)
    ]


def test_every_operation_declares_the_shared_errors_its_shape_calls_for(document: dict[str, Any]) -> None:
    missing = []
    for method, path, operation in operations(document):
        statuses = set(operation["responses"])
        wanted = {"401", "429"}  # authentication and its throttle, everywhere
        if method != "get":
            wanted.add("403")  # a session without its CSRF token
        if "{" in path:
            wanted |= {"404", "422"}
        if any(parameter["in"] == "query" for parameter in operation.get("parameters", [])):
            wanted.add("422")
        if "requestBody" in operation:
            wanted |= {"400", "413", "422"}
        if wanted - statuses:
            missing.append(f"{method.upper()} {path}: {sorted(wanted - statuses)}")
    assert not missing


def test_every_error_response_is_the_one_error_shape(document: dict[str, Any]) -> None:
    others = []
    for method, path, operation in operations(document):
        for status, response in operation["responses"].items():
            if int(status) < 400:
                continue
            schema = response["content"]["application/json"]["schema"]
            ref = schema["$ref"].rsplit("/", 1)[-1]
            if ref != "ErrorOut" and "detail" not in document["components"]["schemas"][ref]["required"]:
                others.append(f"{method.upper()} {path} {status}: {ref}")
    assert not others
    error = document["components"]["schemas"]["ErrorOut"]
    assert error["required"] == ["detail"] and set(error["properties"]) == {"detail", "errors"}


def test_operations_authenticate_and_every_429_has_retry_after(document: dict[str, Any]) -> None:
    for _method, _path, operation in operations(document):
        assert operation["security"] == [{"BearerTokenAuth": []}, {"SignedInSessionAuth": []}]
        assert "Retry-After" in operation["responses"]["429"]["headers"]


def test_the_limits_are_in_the_document(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    message = schemas["MessageIn"]
    assert message["additionalProperties"] is False
    assert (message["properties"]["content"]["minLength"], message["properties"]["content"]["maxLength"]) == (1, 8000)
    assert schemas["ConversationPatch"]["properties"]["title"]["maxLength"] == 200
    assert schemas["TokenIn"]["properties"]["name"]["maxLength"] == 100
    for name in ("MessageIn", "ConversationIn", "ConversationPatch", "TokenIn", "MePatch"):
        assert schemas[name]["additionalProperties"] is False, name
    token = document["paths"]["/api/tokens/{token_id}"]["delete"]["parameters"][0]["schema"]
    assert (token["minimum"], token["maximum"]) == (1, ID_MAX)

    listing = document["paths"]["/api/conversations"]["get"]
    query = {parameter["name"]: parameter["schema"] for parameter in listing["parameters"]}
    assert query["limit"]["anyOf"][0] | {} == {"type": "integer", "minimum": 1, "maximum": 100}
    assert (query["offset"]["minimum"], query["offset"]["maximum"]) == (0, OFFSET_MAX)
    assert "X-Total-Count" in listing["responses"]["200"]["headers"]


@pytest.mark.needs_memory
def test_the_memory_limits_are_in_the_document(document: dict[str, Any]) -> None:
    memory = document["components"]["schemas"]["MemoryIn"]
    assert (memory["properties"]["content"]["maxLength"], memory["additionalProperties"]) == (500, False)
    memory_id = document["paths"]["/api/memories/{memory_id}"]["get"]["parameters"][0]["schema"]
    assert (memory_id["minimum"], memory_id["maximum"]) == (1, ID_MAX)


def test_the_turn_documents_its_server_sent_events(document: dict[str, Any]) -> None:
    for route in ("/api/conversations/{conversation_id}/messages", "/api/conversations/{conversation_id}/retry"):
        content = document["paths"][route]["post"]["responses"]["200"]["content"]
        assert content["application/json"]["schema"] == {"$ref": "#/components/schemas/TurnOut"}
        events = content["text/event-stream"]["schema"]["oneOf"]
        names = [event["properties"]["event"]["const"] for event in events]
        assert names == ["start", "waiting", "delta", "tool", "done", "error"]
        assert all(event["properties"]["data"]["contentMediaType"] == "application/json" for event in events)


# --- Every failure under /api/ answers JSON {"detail": …} -------------------------------------------------


def assert_error_shape(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status
    assert response["Content-Type"].startswith("application/json")
    body: dict[str, Any] = response.json()
    assert isinstance(body["detail"], str) and body["detail"]
    return body


def test_a_validation_error_has_a_detail_and_each_field(api_client: Client) -> None:
    response = api_client.post("/api/conversations", {"title": "x" * 201, "extra": 1}, content_type="application/json")
    body = assert_error_shape(response, 422)
    fields = {tuple(error["loc"]): error["type"] for error in body["errors"]}
    assert fields == {("body", "title"): "string_too_long", ("body", "extra"): "extra_forbidden"}
    assert "title" in body["detail"] and "200" in body["detail"]


@pytest.mark.django_db
def test_an_unknown_api_path_answers_json_404(client: Client) -> None:
    assert_error_shape(client.get("/api/no-such-route"), 404)


def test_a_method_a_route_does_not_have_answers_json_405(api_client: Client) -> None:
    response = api_client.put("/api/me", {}, content_type="application/json")
    assert_error_shape(response, 405)
    assert "GET" in response["Allow"]


def test_a_huge_offset_answers_422_not_500(api_client: Client) -> None:
    assert_error_shape(api_client.get("/api/conversations", {"limit": 10, "offset": OFFSET_MAX + 1}), 422)
    assert api_client.get("/api/conversations", {"limit": 10, "offset": OFFSET_MAX}).json() == []


def test_an_id_past_the_database_integer_answers_422_not_500(client: Client, user: Any) -> None:
    client.force_login(user)  # tokens are revoked from the signed-in session (a token gets 403)
    assert_error_shape(client.delete(f"/api/tokens/{ID_MAX + 1}"), 422)
    assert_error_shape(client.delete(f"/api/tokens/{ID_MAX}"), 404)


def test_a_body_over_the_limit_answers_json_413(api_client: Client, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    response = api_client.post("/api/conversations", {"title": "x" * 200}, content_type="application/json")
    assert_error_shape(response, 413)


def test_a_crash_answers_json_500(api_client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    from accounts import selectors

    def crash(**kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(selectors, "api_token_list", crash)
    api_client.raise_request_exception = False
    body = assert_error_shape(api_client.get("/api/tokens"), 500)
    assert "a bug" not in body["detail"]


@pytest.mark.django_db
def test_an_anonymous_request_answers_json_401(client: Client) -> None:
    assert_error_shape(client.get("/api/me"), 401)


def test_api_docs_show_errors_and_limits(client: Client, user: Any) -> None:
    client.force_login(user)
    page = client.get("/api/docs")
    assert page.status_code == 200 and b"openapi.json" in page.content
    document = client.get("/api/openapi.json").json()
    assert "ErrorOut" in document["info"]["description"]


@pytest.mark.django_db
def test_api_docs_are_for_signed_in_users_when_not_public(client: Client, user: Any, settings: Any) -> None:
    settings.API_DOCS_PUBLIC = False
    page = client.get("/api/docs")
    assert page.status_code == 302 and page["Location"].startswith("/accounts/login/")
    assert_error_shape(client.get("/api/openapi.json"), 401)
    client.force_login(user)
    assert client.get("/api/docs").status_code == 200
    assert client.get("/api/openapi.json").status_code == 200
