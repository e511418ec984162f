from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ConnectConfig(AppConfig):
    """Connected tools (SPEC §9): the MCP server at /mcp and the OpenAI-compatible endpoint at /v1, both
    authenticated by a personal token and held to its scopes. Builds on chat and memory."""

    name = "connect"
    verbose_name = _("Connected tools")
