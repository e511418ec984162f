from typing import Any

from django.core.management.base import BaseCommand

from accounts.models import User


class Command(BaseCommand):
    help = "Create the demo account (demo / demo) when there are no users yet."

    def handle(self, *args: Any, **options: Any) -> None:
        if User.objects.exists():
            return
        User.objects.create_user(username="demo", password="demo")
        self.stdout.write("Created the demo account: username demo, password demo")
