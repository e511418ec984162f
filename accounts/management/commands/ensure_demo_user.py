from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from accounts.models import User

LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


class Command(BaseCommand):
    help = (
        "Create the demo account (demo / demo) when there are no users yet, for a development run only: "
        "debug on and the server bound to loopback (HOST, default 127.0.0.1)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if User.objects.exists():
            return
        host = os.environ.get("HOST", "127.0.0.1").strip()
        if not settings.DEBUG or host not in LOOPBACK:
            self.stdout.write(
                "No demo account: it is only created for a development run (DJANGO_DEBUG=1) bound to loopback. "
                "Sign up at /accounts/signup/ instead."
            )
            return
        User.objects.create_user(username="demo", password="demo")
        self.stdout.write("Created the demo account: username demo, password demo")
