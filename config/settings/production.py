"""Any run without DJANGO_DEBUG: debug off, and the secret key only from DJANGO_SECRET_KEY."""

import os

from config.settings.base import *  # noqa: F403
from config.settings.base import env_bool

# Debug is off unless asked for (DJANGO_DEBUG=1, see development.py).
DEBUG = False
# Without DJANGO_SECRET_KEY the key stays empty and the entry points refuse to start (core/security.py).
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "").strip()
# /api/docs and /api/openapi.json for signed-in users only, unless API_DOCS_PUBLIC=1 (config/api.py).
API_DOCS_PUBLIC = env_bool("API_DOCS_PUBLIC", False)
