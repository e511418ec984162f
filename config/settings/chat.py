"""The chat app's settings (part of base.py, which imports them all): the model provider, the chat turn's
limits and the context budget. Everything an operator may change comes from the environment
(docs/configuration.md)."""

from __future__ import annotations

import os

from config.settings.env import env_int

# --- Model provider (chat.llm) ---
# The provider: key, OpenAI-compatible endpoint (empty: OpenAI), chat model, judge model (defaults to chat).
OPENAI_API_KEY = os.environ.get("OPENAI_API_KEY", "").strip()
OPENAI_BASE_URL = os.environ.get("OPENAI_BASE_URL", "").strip()
CHAT_MODEL = os.environ.get("CHAT_MODEL", "").strip() or "gpt-4o-mini"
MEMORY_MODEL = os.environ.get("MEMORY_MODEL", "").strip() or CHAT_MODEL
# The models a conversation may choose (comma-separated, the first is the default); unset: the provider's
# `GET /v1/models`, CHAT_MODEL first (chat.llm.catalogue).
CHAT_MODELS = os.environ.get("CHAT_MODELS", "").strip()
# "openai" when a key or base URL is configured, else the offline demo model. LLM_BACKEND overrides.
LLM_BACKEND = os.environ.get("LLM_BACKEND", "").strip() or ("openai" if (OPENAI_API_KEY or OPENAI_BASE_URL) else "demo")
# The longest silence between two bytes from the provider (the HTTP read timeout).
LLM_TIMEOUT = float(os.environ.get("LLM_TIMEOUT", "60"))
# Retries of a call that failed before anything arrived (connection refused, HTTP 429/5xx); never
# after a timeout, which would queue behind the abandoned request on a single-slot server.
LLM_MAX_RETRIES = env_int("LLM_MAX_RETRIES", 2)
# Wall-clock limits that keep-alive pings cannot extend: the first token of a reply, and a whole turn.
LLM_FIRST_TOKEN_TIMEOUT = float(os.environ.get("LLM_FIRST_TOKEN_TIMEOUT", "30"))
# After the first token, the longest wait for the next one; keep-alive comments do not extend it either.
LLM_STALL_TIMEOUT = float(os.environ.get("LLM_STALL_TIMEOUT", "60"))
# Requests one provider answers at once, across every process (0: no limit); the rest wait their turn,
# chat ahead of judge calls and summaries (chat.model_queue). 1 for a single-slot server (llama.cpp, Ollama).
LLM_MAX_CONCURRENCY = env_int("LLM_MAX_CONCURRENCY", 0)
CHAT_TURN_TIMEOUT = float(os.environ.get("CHAT_TURN_TIMEOUT", "300"))
# "auto": offer tools (flush_memory) unless the provider rejects or ignores them; "off": never.
CHAT_TOOLS = os.environ.get("CHAT_TOOLS", "auto").strip().lower() or "auto"

# --- Chat turn ---
# The longest user message accepted, and the most tool calls the model may make in one turn.
CHAT_MAX_MESSAGE_CHARS = 8000
CHAT_MAX_TOOL_STEPS = env_int("CHAT_MAX_TOOL_STEPS", 4)
# A reply ends at this many characters (a provider that never stops), saved with a note.
CHAT_REPLY_MAX_CHARS = env_int("CHAT_REPLY_MAX_CHARS", 200_000)
# Replies one user may have being written at once, across conversations.
CHAT_USER_RUN_SLOTS = env_int("CHAT_USER_RUN_SLOTS", 2)
# A running turn's lease on its conversation, renewed every second by the process running it; a turn
# whose process died is closed (saved "interrupted") at most this long plus one sweep after (chat/turn/leases.py).
CHAT_LOCK_TTL_SECONDS = env_int("CHAT_LOCK_TTL_SECONDS", 20)
CHAT_RECOVERY_SWEEP_SECONDS = float(os.environ.get("CHAT_RECOVERY_SWEEP_SECONDS", "5"))
# Model turns (retries included) a user may start in any 60 seconds, and that one client address may start
# across every account; one more answers 429 with Retry-After. Counted in the database (chat.TurnStart),
# which deleting a conversation or a message does not touch.
CHAT_USER_TURNS_PER_MINUTE = env_int("CHAT_USER_TURNS_PER_MINUTE", 20)
CHAT_ADDRESS_TURNS_PER_MINUTE = env_int("CHAT_ADDRESS_TURNS_PER_MINUTE", 120)
# A temporary chat is deleted this long after its last message (the worker's sweep, chat.tasks).
CHAT_TEMPORARY_HOURS = env_int("CHAT_TEMPORARY_HOURS", 24)

# --- Context budget and compaction (chat.llm.tokens, chat.turn.compaction) ---
# The chat model's context window, the room kept in it for the reply (at most half the window), and the
# fraction of the rest at which the agent state is summarized in the background. The reply's room is also
# the `max_tokens` of every chat request.
CHAT_CONTEXT_TOKENS = env_int("CHAT_CONTEXT_TOKENS", 32000)
# Without CHAT_CONTEXT_TOKENS, the window the server states (vLLM, llama.cpp, Ollama) is used (chat.llm.server_facts).
CHAT_CONTEXT_FROM_SERVER = not os.environ.get("CHAT_CONTEXT_TOKENS", "").strip()
CHAT_REPLY_TOKENS = env_int("CHAT_REPLY_TOKENS", 4000)
CHAT_COMPACT_AT = float(os.environ.get("CHAT_COMPACT_AT", "0.75"))
SUMMARY_MODEL = os.environ.get("SUMMARY_MODEL", "").strip() or CHAT_MODEL
