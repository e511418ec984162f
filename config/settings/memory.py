"""The memory app's settings (part of base.py, which imports them all): extraction, recall, the judge,
and the worker's sweeps. Everything an operator may change comes from the environment
(docs/configuration.md)."""

from __future__ import annotations

import os

from config.settings.env import env_bool, env_int

# Pending user messages that start a background extraction (SPEC §4), and the memory block's size in the prompt.
MEMORY_EXTRACT_MIN_TURNS = env_int("MEMORY_EXTRACT_MIN_TURNS", 3)
MEMORY_PROMPT_MAX_CHARS = env_int("MEMORY_PROMPT_MAX_CHARS", 4000)
# A background run at the threshold waits until the user's newest pending message is this many seconds old,
# so one judge call covers a burst; never longer than MEMORY_EXTRACT_MAX_WAIT_SECONDS after the oldest.
MEMORY_EXTRACT_IDLE_SECONDS = float(os.environ.get("MEMORY_EXTRACT_IDLE_SECONDS", "60"))
MEMORY_EXTRACT_MAX_WAIT_SECONDS = float(os.environ.get("MEMORY_EXTRACT_MAX_WAIT_SECONDS", "600"))
# Embeddings for memory recall: unset, the embedded multilingual model (chat/llm/local_embedder.py); "off",
# none; any other name, that model at an OpenAI-compatible /v1/embeddings, whose base URL and key default to
# the chat provider's. A turn waits at most EMBEDDING_TIMEOUT seconds for its text's vector.
EMBEDDING_MODEL = os.environ.get("EMBEDDING_MODEL", "").strip()
EMBEDDING_BASE_URL = os.environ.get("EMBEDDING_BASE_URL", "").strip()
EMBEDDING_API_KEY = os.environ.get("EMBEDDING_API_KEY", "").strip()
EMBEDDING_TIMEOUT = float(os.environ.get("EMBEDDING_TIMEOUT", "1.5"))
# The judge: the most `max_tokens` for its JSON answer (the room kept scales with the batch, up to this) and
# its total time limit (seconds).
MEMORY_JUDGE_MAX_TOKENS = env_int("MEMORY_JUDGE_MAX_TOKENS", 2000)
# Which judge prompt: "auto" (the compact one below an 8,192-token window), "full" or "compact".
MEMORY_JUDGE_PROMPT = os.environ.get("MEMORY_JUDGE_PROMPT", "auto").strip().lower() or "auto"
MEMORY_JUDGE_TIMEOUT = float(os.environ.get("MEMORY_JUDGE_TIMEOUT", "120"))
# Aliases kept for one release (chat.model_queue): background requests (judge calls, summaries) that may
# run at once against one provider, across every process; and MEMORY_YIELD_TO_CHAT=1, read as
# LLM_MAX_CONCURRENCY=1 when that is not set.
MEMORY_JUDGE_CONCURRENCY = env_int("MEMORY_JUDGE_CONCURRENCY", 1)
MEMORY_YIELD_TO_CHAT = env_bool("MEMORY_YIELD_TO_CHAT", False)
# The judge's context window (0: the chat model's, CHAT_CONTEXT_TOKENS): no judge request exceeds it.
MEMORY_CONTEXT_TOKENS = env_int("MEMORY_CONTEXT_TOKENS", 0)
# Active memories a user may have; adds past it are refused (API 409, page message; the judge's are dropped).
MEMORY_MAX_ACTIVE = env_int("MEMORY_MAX_ACTIVE", 500)
# Operations applied from one judge answer; the rest are dropped with a recorded reason.
MEMORY_MAX_OPS_PER_ANSWER = env_int("MEMORY_MAX_OPS_PER_ANSWER", 50)
# Every worker sweeps for extraction work a dead worker or a lost message left behind, at start and then
# this often; work is overdue when its newest message is older than the grace (memory/extraction/recovery.py).
MEMORY_SWEEP_SECONDS = float(os.environ.get("MEMORY_SWEEP_SECONDS", "30"))
# Suggestions (learned memories waiting for Keep or Discard) left unanswered this long are deleted.
MEMORY_SUGGESTION_DAYS = env_int("MEMORY_SUGGESTION_DAYS", 14)
MEMORY_SWEEP_GRACE_SECONDS = float(os.environ.get("MEMORY_SWEEP_GRACE_SECONDS", "30"))
# Extraction runs older than this many days keep their counts, status and timings but lose their text
# (judge input, raw output, the operations' content, error details); the worker's sweep strips it.
MEMORY_RUN_RETENTION_DAYS = env_int("MEMORY_RUN_RETENTION_DAYS", 30)
# A run's claim on a user expires after this many seconds, longer than a judge call (memory/extraction/claim.py).
MEMORY_CLAIM_TTL_SECONDS = 300
# After a failed judge call the batch rests this many seconds × 2^(attempt-1) before the next try.
MEMORY_RETRY_BASE_SECONDS = float(os.environ.get("MEMORY_RETRY_BASE_SECONDS", "30"))
# A server that times out, refuses the connection or answers 5xx is waited for, never held against a batch:
# retries back off from MEMORY_RETRY_BASE_SECONDS to at most MEMORY_RETRY_MAX_SECONDS apart, for this many
# hours from the batch's first such failure; then the messages stay pending for the next trigger.
MEMORY_RETRY_MAX_SECONDS = float(os.environ.get("MEMORY_RETRY_MAX_SECONDS", "600"))
MEMORY_RETRY_HOURS = float(os.environ.get("MEMORY_RETRY_HOURS", "24"))
# How long a flush waits for another run of the same user to finish before answering "busy" (seconds).
MEMORY_FLUSH_WAIT_SECONDS = 10.0
# A background task that found the user's claim taken tries again after this many seconds (memory/tasks.py).
MEMORY_BUSY_RETRY_SECONDS = 20.0
# Tidy-up (memory.consolidation): a background pass this many days after a user's last one (or first
# memory), for users with memories new since; 0 turns the background pass off ("Tidy up" still works).
MEMORY_CONSOLIDATE_DAYS = env_int("MEMORY_CONSOLIDATE_DAYS", 7)
