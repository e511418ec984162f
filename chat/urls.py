from django.urls import path

from chat import views

app_name = "chat"
urlpatterns = [
    path("", views.index, name="index"),
    path("c/new/", views.conversation_new, name="conversation_new"),
    path("search/", views.search, name="search"),
    path("c/more/", views.conversation_more, name="conversation_more"),
    path("c/<uuid:conversation_id>/", views.conversation_detail, name="conversation"),
    path("c/<uuid:conversation_id>/rename/", views.conversation_rename, name="conversation_rename"),
    path("c/<uuid:conversation_id>/export.md", views.conversation_export, name="conversation_export"),
    path("c/<uuid:conversation_id>/model/", views.conversation_model, name="conversation_model"),
    path("c/<uuid:conversation_id>/delete/", views.conversation_delete, name="conversation_delete"),
    path("c/<uuid:conversation_id>/messages/<int:message_id>/", views.message_detail, name="message"),
    path("c/<uuid:conversation_id>/messages/<int:message_id>/version/", views.message_version, name="message_version"),
]
