import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from core.security import require_secret_key

require_secret_key()
application = get_wsgi_application()
