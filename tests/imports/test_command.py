from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from chat.models import Conversation
from tests.imports import exports

pytestmark = pytest.mark.django_db


def test_import_chats_imports_an_export_for_a_user(user: Any, tmp_path: Path) -> None:
    conversations, projects = exports.claude_export()
    export = tmp_path / "claude.zip"
    export.write_bytes(exports.claude_zip(conversations, projects))
    out = StringIO()

    call_command("import_chats", "alice", str(export), "--source", "claude", stdout=out)

    assert "2 conversations and 4 messages imported" in out.getvalue()
    assert Conversation.objects.filter(owner=user, imported_from="claude").count() == 2
    assert export.exists()  # the admin's file is left where it was


def test_import_chats_refuses_a_bad_file_with_the_reason(user: Any, tmp_path: Path) -> None:
    export = tmp_path / "x.json"
    export.write_bytes(b'[{"mapping": ')

    with pytest.raises(CommandError, match="cut short"):
        call_command("import_chats", "alice", str(export))
