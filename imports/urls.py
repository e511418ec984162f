from django.urls import path

from imports import views

app_name = "imports"
urlpatterns = [
    path("settings/import/", views.import_page, name="page"),
    path("settings/import/list/", views.import_list, name="list"),
    path("settings/import/upload/", views.import_upload, name="upload"),
    path("settings/import/paste/", views.import_paste, name="paste"),
    path("settings/import/<int:import_id>/start/", views.import_start, name="start"),
    path("settings/import/<int:import_id>/learn/", views.import_learn, name="learn"),
    path("settings/import/<int:import_id>/learn/stop/", views.import_learn_stop, name="learn_stop"),
    path("settings/import/<int:import_id>/remove/", views.import_remove, name="remove"),
]
