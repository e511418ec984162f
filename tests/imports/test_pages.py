from __future__ import annotations

from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from imports import runner
from imports.models import ChatImport
from tests.imports import exports

pytestmark = pytest.mark.django_db


@pytest.fixture
def signed_in(client: Any, user: Any) -> Any:
    client.force_login(user)
    return client


def _upload(client: Any, data: bytes) -> Any:
    return client.post("/settings/import/upload/", {"file": SimpleUploadedFile("export.zip", data)})


def test_the_page_offers_upload_and_paste_with_the_prompt(signed_in: Any) -> None:
    page = signed_in.get("/settings/import/").content.decode()

    assert 'enctype="multipart/form-data"' in page
    assert "List everything you remember about me" in page
    assert "Nothing imported yet." in page


def test_an_upload_shows_its_preview_then_imports(signed_in: Any) -> None:
    response = _upload(signed_in, exports.chatgpt_zip([exports.gpt_branched(), exports.gpt_cycle()]))
    row = ChatImport.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"#import-{row.pk}")

    page = signed_in.get("/settings/import/").content.decode()
    assert "1 conversation, 4 messages" in page
    assert "its message tree has a cycle" in page
    assert "2 from other branches" in page

    signed_in.post(f"/settings/import/{row.pk}/start/")
    assert 'hx-trigger="every 1s"' in signed_in.get("/settings/import/list/").content.decode()
    runner.import_run(import_id=row.pk)
    page = signed_in.get("/settings/import/").content.decode()
    assert "1 conversation imported (4 messages), 1 skipped" in page
    assert "Learn from imported chats" in page


def test_a_bad_file_is_refused_with_a_message_on_the_page(signed_in: Any) -> None:
    response = _upload(signed_in, b"not an export at all")

    assert response.status_code == 400
    assert "neither a ZIP nor a JSON file" in response.content.decode()
    assert not ChatImport.objects.exists()


def test_another_users_import_is_404_on_every_action(signed_in: Any, other_user: Any) -> None:
    row = ChatImport.objects.create(owner=other_user, source="chatgpt")
    for action in ("start", "learn", "learn/stop", "remove"):
        assert signed_in.post(f"/settings/import/{row.pk}/{action}/").status_code == 404
    assert ChatImport.objects.filter(pk=row.pk).exists()


def test_the_page_is_chinese_for_a_chinese_user(signed_in: Any, user: Any) -> None:
    user.language = "zh-hans"
    user.save()

    page = signed_in.get("/settings/import/").content.decode()

    assert "导入" in page
