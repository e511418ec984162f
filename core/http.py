"""The request as our views see it: Django's, with django-htmx's `request.htmx` typed (its middleware sets
it on every request). Annotate a view's `request` with this class rather than ignore the attribute."""

from __future__ import annotations

import django.http
from django_htmx.middleware import HtmxDetails


class HttpRequest(django.http.HttpRequest):
    htmx: HtmxDetails
