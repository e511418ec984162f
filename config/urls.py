from django.contrib import admin
from django.urls import include, path

from accounts import views as accounts_views
from config.api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("accounts/", include("accounts.urls")),
    path("settings/tokens/", accounts_views.token_page, name="tokens"),
    path("settings/tokens/<int:token_id>/revoke/", accounts_views.token_revoke, name="token_revoke"),
    path("", include("memory.urls")),
    path("", include("chat.urls")),
]
