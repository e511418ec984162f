from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ImportsConfig(AppConfig):
    name = "imports"
    verbose_name = _("Imports")

    def ready(self) -> None:
        """A link in the user menu; an account's imports in its export and its deletion (accounts.data)."""
        from accounts import data
        from chat import extensions
        from imports import data as imports_data

        extensions.register_page_block("user-menu", "imports", "imports/chat/_user_menu.html")
        data.register_exporter("imports", imports_data.imports_export)
        data.register_eraser("imports", imports_data.account_erase)
