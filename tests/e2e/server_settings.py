"""The browser tests' servers: a development run (config.settings, as `make run` picks it) whose password
hashes are cheap. Every browser test signs up or logs in at least once; a full-strength hash costs a
noticeable share of a second of processor time each time, and no browser test is about the hash."""

from config.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
