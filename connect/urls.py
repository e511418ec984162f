from django.urls import URLPattern, path

from connect import openai_api

app_name = "connect"
urlpatterns: list[URLPattern] = [
    path("v1/models", openai_api.model_list, name="models"),
    path("v1/chat/completions", openai_api.chat_completions, name="chat_completions"),
]
