from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class UsageConfig(AppConfig):
    name = "usage"
    verbose_name = _("Usage")

    def ready(self) -> None:
        """Count what chat.llm.metering reports (chat works on its own without this app)."""
        from chat import extensions
        from chat.llm import metering
        from usage.quotas import quota_check
        from usage.receivers import on_provider_used, on_reply_metered
        from usage.selectors import memory_tokens_annotate

        extensions.register_spend_gate("usage-quota", quota_check)
        extensions.register_message_annotator("usage-memory-tokens", memory_tokens_annotate)
        extensions.register_page_block("user-menu", "usage", "usage/chat/_user_menu.html")

        metering.provider_used.connect(on_provider_used, dispatch_uid="usage.on_provider_used")
        metering.reply_metered.connect(on_reply_metered, dispatch_uid="usage.on_reply_metered")
