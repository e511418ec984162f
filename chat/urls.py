from django.urls import path

from chat import project_views, views

app_name = "chat"
urlpatterns = [
    path("", views.index, name="index"),
    path("c/new/", views.conversation_new, name="conversation_new"),
    path("search/", views.search, name="search"),
    path("c/more/", views.conversation_more, name="conversation_more"),
    path("c/list/", views.conversation_nav, name="conversation_nav"),
    path("c/<uuid:conversation_id>/", views.conversation_detail, name="conversation"),
    path("c/<uuid:conversation_id>/rename/", views.conversation_rename, name="conversation_rename"),
    path("c/<uuid:conversation_id>/pin/", views.conversation_pin, name="conversation_pin"),
    path("c/<uuid:conversation_id>/export.md", views.conversation_export, name="conversation_export"),
    path("c/<uuid:conversation_id>/model/", views.conversation_model, name="conversation_model"),
    path("c/<uuid:conversation_id>/delete/", views.conversation_delete, name="conversation_delete"),
    path("c/<uuid:conversation_id>/project/", project_views.conversation_project, name="conversation_project"),
    path("projects/", project_views.project_list, name="projects"),
    path("projects/<int:project_id>/", project_views.project_detail, name="project"),
    path("projects/<int:project_id>/end/", project_views.project_end, name="project_end"),
    path("projects/<int:project_id>/new/", project_views.project_new_chat, name="project_new_chat"),
    path("c/<uuid:conversation_id>/messages/<int:message_id>/", views.message_detail, name="message"),
    path("c/<uuid:conversation_id>/messages/<int:message_id>/version/", views.message_version, name="message_version"),
]
