from django.urls import path

from memory import views

app_name = "memory"
urlpatterns = [
    path("settings/memory/", views.memory_page, name="page"),
    path("settings/memory/add/", views.memory_add, name="add"),
    path("settings/memory/switch/", views.memory_switch, name="switch"),
    path("settings/memory/forget/", views.memory_forget, name="forget"),
    path("settings/memory/export/", views.memory_export, name="export"),
    path("settings/memory/notices/", views.memory_notices, name="notices"),
    path("settings/memory/review/", views.memory_review_setting, name="review"),
    path("settings/memory/<int:memory_id>/keep/", views.memory_keep, name="keep"),
    path("settings/memory/<int:memory_id>/discard/", views.memory_discard, name="discard"),
    path("settings/memory/<int:memory_id>/pin/", views.memory_pin, name="pin"),
    path("settings/memory/<int:memory_id>/expiry/", views.memory_expiry, name="expiry"),
    path("settings/memory/<int:memory_id>/", views.memory_row, name="row"),
    path("settings/memory/<int:memory_id>/edit/", views.memory_edit, name="edit"),
    path("settings/memory/<int:memory_id>/delete/", views.memory_delete, name="delete"),
    path("settings/memory/<int:memory_id>/restore/", views.memory_restore, name="restore"),
    path("settings/memory/<int:memory_id>/wrong/", views.reply_wrong, name="reply_wrong"),
    path("settings/memory/<int:memory_id>/outdated/", views.reply_outdated, name="reply_outdated"),
]
