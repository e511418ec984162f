from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = _("Accounts")

    def ready(self) -> None:
        from accounts.receivers import on_password_changed
        from accounts.signals import password_changed

        password_changed.connect(on_password_changed, dispatch_uid="accounts.on_password_changed")
