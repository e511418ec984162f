from django.urls import path

from usage import views

app_name = "usage"
urlpatterns = [
    path("settings/usage/", views.usage_page, name="page"),
]
