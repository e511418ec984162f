"""The test suite's settings (pytest): the settings a real start would pick, plus what only tests want."""

from config.settings import *  # noqa: F403

# Tests run without DJANGO_SECRET_KEY; a fixed key stands in (a real start refuses to run keyless).
SECRET_KEY = SECRET_KEY or "insecure-key-for-tests-only-" + "x" * 40  # noqa: F405
# The production hasher costs a third of a second per user; tests need no strength.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Tests never ask a model server for its window unless they mean to (chat.llm.server_facts).
CHAT_CONTEXT_FROM_SERVER = False
# The API conformance tests read /api/openapi.json anonymously (the production default is tested apart).
API_DOCS_PUBLIC = True
# Background extraction runs at once unless a test asks for the wait for a quiet spell (tests/memory/test_bursts.py).
MEMORY_EXTRACT_IDLE_SECONDS = 0.0
# Tests embed only when they mean to (the embedded model costs tens of milliseconds a text): they set
# EMBEDDING_MODEL to "" for it, or to a name served by tests/fake_openai.py.
EMBEDDING_MODEL = "off"
