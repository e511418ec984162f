from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    verbose_name = "Accounts"

    def ready(self) -> None:
        from accounts.receivers import on_password_changed
        from accounts.signals import password_changed

        password_changed.connect(on_password_changed, dispatch_uid="accounts.on_password_changed")
