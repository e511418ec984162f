"""A development run (`make run`, DJANGO_DEBUG=1): debug on and, without DJANGO_SECRET_KEY, a random
key kept under var/ so sessions survive a restart."""

import os

from config.settings.base import *  # noqa: F403
from config.settings.base import VAR_DIR, local_secret_key

# Debug pages and the local key: `make run` asks for this with DJANGO_DEBUG=1.
DEBUG = True
# DJANGO_SECRET_KEY when set, else the key kept in var/secret_key (created on first use).
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "").strip() or local_secret_key(VAR_DIR)
