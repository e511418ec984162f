from django.urls import path

from memory.views import edits, notices, page, replies, scopes, suggestions, tidy

app_name = "memory"
urlpatterns = [
    path("settings/memory/", page.memory_page, name="page"),
    path("settings/memory/add/", edits.memory_add, name="add"),
    path("settings/memory/switch/", page.memory_switch, name="switch"),
    path("settings/memory/forget/", page.memory_forget, name="forget"),
    path("settings/memory/export/", page.memory_export, name="export"),
    path("settings/memory/notices/", notices.memory_notices, name="notices"),
    path("settings/memory/review/", suggestions.memory_review_setting, name="review"),
    path("settings/memory/tidy/", tidy.tidy_run, name="tidy"),
    path("settings/memory/tidy/<int:proposal_id>/accept/", tidy.tidy_accept, name="tidy_accept"),
    path("settings/memory/tidy/<int:proposal_id>/reject/", tidy.tidy_reject, name="tidy_reject"),
    path("settings/memory/tidy/<int:proposal_id>/undo/", tidy.tidy_undo, name="tidy_undo"),
    path("settings/memory/<int:memory_id>/keep/", suggestions.memory_keep, name="keep"),
    path("settings/memory/<int:memory_id>/discard/", suggestions.memory_discard, name="discard"),
    path("settings/memory/<int:memory_id>/pin/", edits.memory_pin, name="pin"),
    path("settings/memory/<int:memory_id>/expiry/", edits.memory_expiry, name="expiry"),
    path("settings/memory/<int:memory_id>/", page.memory_row, name="row"),
    path("settings/memory/<int:memory_id>/edit/", edits.memory_edit, name="edit"),
    path("settings/memory/<int:memory_id>/move/", scopes.memory_move, name="move"),
    path("settings/memory/<int:memory_id>/delete/", edits.memory_delete, name="delete"),
    path("settings/memory/<int:memory_id>/restore/", edits.memory_restore, name="restore"),
    path("settings/memory/<int:memory_id>/wrong/", replies.reply_wrong, name="reply_wrong"),
    path("settings/memory/<int:memory_id>/outdated/", replies.reply_outdated, name="reply_outdated"),
]
