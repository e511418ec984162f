from __future__ import annotations

import secrets
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import User
from accounts.services import api_token_create


class Command(BaseCommand):
    help = "Create a personal API token for USERNAME and print it on the last line."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument("--create-user", action="store_true", help="Create the user if it does not exist.")
        parser.add_argument("--name", default="", help="A label for the token.")

    def handle(self, *args: Any, **options: Any) -> None:
        username: str = options["username"]
        user = User.objects.filter(username=username).first()
        if user is None:
            if not options["create_user"]:
                raise CommandError(f"No user named {username!r}. Pass --create-user to create one.")
            # An unusable password: this account signs in with its token until a password is set.
            user = User.objects.create_user(username=username, password=None)
            user.set_unusable_password()
            user.save()
            self.stdout.write(f"Created user {username!r}.")
        _, plain = api_token_create(user=user, name=options["name"] or f"cli-{secrets.token_hex(2)}")
        self.stdout.write(f"Token for {username!r} (shown once, keep it secret):")
        self.stdout.write(plain)
