"""The JavaScript catalogue (gettext, ngettext and interpolate for scripts) at an address a browser keeps.

Django builds the catalogue on every request, and every page loads it before its own scripts run: a
page whose scripts wait for it answers Enter in the composer late. So each page asks for it at an
address naming its language and the catalogues' version (`?l=…&v=…`), answered with a year's
`Cache-Control`: a browser fetches it once per language and release.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils import translation
from django.utils.decorators import method_decorator
from django.views.decorators.cache import cache_control
from django.views.i18n import JavaScriptCatalog

YEAR_SECONDS = 365 * 24 * 3600


@lru_cache(maxsize=1)
def catalogue_version() -> str:
    """Changes whenever a compiled JavaScript catalogue does (a release with new translations)."""
    stamps = sorted(
        f"{path}:{path.stat().st_mtime_ns}:{path.stat().st_size}"
        for root in settings.LOCALE_PATHS
        for path in Path(root).rglob("djangojs.mo")
    )
    return hashlib.sha256("\n".join(stamps).encode()).hexdigest()[:12]


def catalogue_url() -> str:
    return f"{reverse('javascript-catalog')}?l={translation.get_language()}&v={catalogue_version()}"


def javascript_catalogue(request: HttpRequest) -> dict[str, Any]:
    """Context processor: the address of the page's catalogue (templates/base.html)."""
    return {"javascript_catalogue_url": catalogue_url()}


@method_decorator(cache_control(max_age=YEAR_SECONDS, immutable=True), name="get")
class CachedJavaScriptCatalog(JavaScriptCatalog):
    """The catalogue of the language its address names (`l`), else of the request's."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        language = request.GET.get("l", "")
        if language and translation.check_for_language(language):
            translation.activate(language)
        return super().get(request, *args, **kwargs)
