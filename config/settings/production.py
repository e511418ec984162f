"""Any run without DJANGO_DEBUG: debug off, and the secret key only from DJANGO_SECRET_KEY."""

import os

from config.settings.base import *  # noqa: F403

# Debug is off unless asked for (DJANGO_DEBUG=1, see development.py).
DEBUG = False
# Without DJANGO_SECRET_KEY the key stays empty and the entry points refuse to start (config/security.py).
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "").strip()
