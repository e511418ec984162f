"""The test settings without the memory app: chat and accounts work on their own (SPEC's accounts ←
chat ← memory). `make test` runs the chat and accounts tests with it (scripts/run_tests.py); the tests
marked `needs_memory` are left out there."""

from config.settings.test import *  # noqa: F403

# Imports learn through memory, and the connected tools' app (MCP, /v1) builds on it: they go with it.
INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in ("memory", "imports", "connect")]  # noqa: F405
