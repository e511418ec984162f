from django.apps import apps
from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

from accounts import views as accounts_views
from config.api import api
from core.i18n import CachedJavaScriptCatalog

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("jsi18n/", CachedJavaScriptCatalog.as_view(), name="javascript-catalog"),
    path("accounts/", include("accounts.urls")),
    path("settings/tokens/", accounts_views.token_page, name="tokens"),
    path("settings/language/", accounts_views.language_set, name="language"),
    path("settings/tokens/<int:token_id>/revoke/", accounts_views.token_revoke, name="token_revoke"),
    path("settings/account/", accounts_views.account_page, name="account"),
    path("settings/account/export/", accounts_views.account_export, name="account_export"),
    path("accounts/deleted/", accounts_views.account_deleted, name="account_deleted"),
]
if apps.is_installed("memory"):  # chat works without it (config/settings/test_without_memory.py)
    urlpatterns.append(path("", include("memory.urls")))
urlpatterns.append(path("", include("usage.urls")))
if apps.is_installed("imports"):
    urlpatterns.append(path("", include("imports.urls")))
if apps.is_installed("connect"):  # the OpenAI-compatible endpoint (the MCP server is in config/asgi.py)
    urlpatterns.append(path("", include("connect.urls")))
urlpatterns.append(path("", include("chat.urls")))
