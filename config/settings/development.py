"""A development run (`make run`, DJANGO_DEBUG=1): debug on and, without DJANGO_SECRET_KEY, a random
key kept under var/ so sessions survive a restart."""

import os

from config.settings.base import *  # noqa: F403
from config.settings.base import VAR_DIR, env_bool, local_secret_key

# Debug pages and the local key: `make run` asks for this with DJANGO_DEBUG=1.
DEBUG = True
# DJANGO_SECRET_KEY when set, else the key kept in var/secret_key (created on first use).
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "").strip() or local_secret_key(VAR_DIR)
# /api/docs and /api/openapi.json for anyone, unless API_DOCS_PUBLIC=0 (config/api.py).
API_DOCS_PUBLIC = env_bool("API_DOCS_PUBLIC", True)
