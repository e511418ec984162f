"""The connected tools' routes in the API's OpenAPI document (config/api.py adds them): `/v1/models` and
`/v1/chat/completions`, which answer OpenAI's shapes (errors included), and `/mcp`, described as the MCP
endpoint it is (its messages are JSON-RPC, specified by the Model Context Protocol, not here)."""

from __future__ import annotations

from typing import Any

OPENAI_ERROR = {
    "type": "object",
    "description": "OpenAI's error shape, which OpenAI clients read.",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "code"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "code": {"type": ["string", "null"]},
            },
        }
    },
}
MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool", "function"]},
        "content": {"anyOf": [{"type": "string"}, {"type": "array"}, {"type": "null"}]},
    },
}
REQUEST = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {
        "model": {"type": "string", "minLength": 1, "maxLength": 200, "description": "One of `/v1/models`."},
        "messages": {"type": "array", "minItems": 1, "maxItems": 10000, "items": MESSAGE},
        "stream": {"type": "boolean", "default": False},
        "tools": {
            "type": ["array", "null"],
            "maxItems": 128,
            "items": {"type": "object"},
            "description": "The client's own tools, passed to the provider as they are.",
        },
        "max_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000000},
        "max_completion_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": 1000000},
    },
    "description": "OpenAI's chat completion request; other fields are accepted and not forwarded.",
}
COMPLETION = {
    "type": "object",
    "required": ["id", "object", "created", "model", "choices"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "chat.completion"},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "choices": {"type": "array", "items": {"type": "object"}},
    },
}
MODELS = {
    "type": "object",
    "required": ["object", "data"],
    "properties": {
        "object": {"const": "list"},
        "data": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "object", "created", "owned_by"],
                "properties": {
                    "id": {"type": "string"},
                    "object": {"const": "model"},
                    "created": {"type": "integer"},
                    "owned_by": {"type": "string"},
                },
            },
        },
    },
}
HEADER = {"schema": {"type": "string"}}


def _error(description: str, **headers: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": description, "content": {"application/json": {"schema": OPENAI_ERROR}}}
    if headers:
        answer["headers"] = headers
    return answer


def _auth_errors() -> dict[str, Any]:
    return {
        "401": _error("Missing, invalid, revoked or expired API token."),
        "403": _error("The token lacks the `chat` scope."),
        "405": _error("A method the route does not have.", Allow={**HEADER, "description": "The allowed method."}),
        "429": _error(
            "Too many failed tokens from this address, or too many turns (CHAT_USER_TURNS_PER_MINUTE).",
            **{"Retry-After": {**HEADER, "description": "Seconds to wait before trying again."}},
        ),
    }


def paths() -> dict[str, Any]:
    completion_headers = {
        "X-Memora-Memories": {
            **HEADER,
            "description": "The ids of the memories added to the request, comma-separated.",
        },
        "X-Memora-Conversation-Id": {**HEADER, "description": "The conversation the messages were saved in."},
    }
    request_headers = [
        {
            "name": "X-Memora-Conversation",
            "in": "header",
            "required": False,
            "schema": {"type": "string", "maxLength": 200},
            "description": "Save the messages in the conversation of this name (else one per token and day).",
        },
        {
            "name": "X-Memora-Temporary",
            "in": "header",
            "required": False,
            "schema": {"type": "string", "enum": ["1"]},
            "description": "1: use and learn nothing (no memory block, nothing saved).",
        },
    ]
    security: list[dict[str, list[str]]] = [{"BearerTokenAuth": []}]
    return {
        "/v1/models": {
            "get": {
                "operationId": "openai_models",
                "summary": "The model names /v1/chat/completions takes (OpenAI-compatible)",
                "tags": ["openai-compatible"],
                "security": security,
                "responses": {
                    "200": {"description": "OK", "content": {"application/json": {"schema": MODELS}}},
                    **_auth_errors(),
                },
            }
        },
        "/v1/chat/completions": {
            "post": {
                "operationId": "openai_chat_completions",
                "summary": "A chat completion with Memora's memory (OpenAI-compatible; token scope `chat`)",
                "description": "Forwarded to the configured provider with the memory block for the last user "
                "message (`memory:read`); new user messages are saved and learned from. `stream: true` answers "
                "OpenAI's server-sent chunks, ending with `data: [DONE]`.",
                "tags": ["openai-compatible"],
                "security": security,
                "parameters": request_headers,
                "requestBody": {"required": True, "content": {"application/json": {"schema": REQUEST}}},
                "responses": {
                    "200": {
                        "description": "The completion, or its stream of chunks when `stream` is true.",
                        "headers": completion_headers,
                        "content": {
                            "application/json": {"schema": COMPLETION},
                            "text/event-stream": {"schema": {"type": "string"}},
                        },
                    },
                    "400": _error("Not JSON, or a field is missing or outside its limits."),
                    "404": _error("No such model (see /v1/models)."),
                    "409": _error("The conversation is busy with another request for longer than 20 s."),
                    "413": _error("The request body is over DATA_UPLOAD_MAX_MEMORY_SIZE."),
                    "502": _error("The model provider failed."),
                    **_auth_errors(),
                },
            }
        },
        "/mcp": {
            method: {
                "operationId": f"mcp_{method}",
                "summary": "The MCP server (Model Context Protocol, Streamable HTTP transport)",
                "description": "JSON-RPC messages as the Model Context Protocol specifies them, for MCP clients "
                "(tools: search_memories, list_memories, propose_memory, forget_memory, search_conversations; "
                "see docs/connected-tools.md). Authenticated by a personal token; each tool needs its scope.",
                "tags": ["mcp"],
                "security": security,
                "responses": {
                    "200": {"description": "A JSON-RPC answer, as JSON or server-sent events."},
                    "401": {
                        "description": "Missing, invalid, revoked or expired API token (WWW-Authenticate: Bearer)."
                    },
                    "404": {"description": "An unknown or ended MCP session."},
                    "429": {"description": "Too many failed tokens from this address; Retry-After says when to retry."},
                },
            }
            for method in ("post", "get", "delete")
        },
    }
