"""Memora settings: `config.settings` is what every entry point loads (manage.py, ASGI/WSGI, Celery).

DJANGO_DEBUG picks the module, exactly as it always has: unset or off gives production.py (debug off,
the key must come from DJANGO_SECRET_KEY), on gives development.py (debug on, a random key kept under
var/). Everything else is shared and lives in base.py; the test suite runs on test.py.
"""

from config.settings.base import env_bool

if env_bool("DJANGO_DEBUG", False):
    from config.settings.development import *  # noqa: F403
else:
    from config.settings.production import *  # noqa: F403
