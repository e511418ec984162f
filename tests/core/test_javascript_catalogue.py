"""The JavaScript catalogue at an address a browser keeps (core/i18n.py): each page names its language
and the catalogues' version, and the answer may be cached for a year."""

from __future__ import annotations

import re
from html import unescape

import pytest
from django.test import Client
from django.urls import reverse

from core.i18n import catalogue_version

pytestmark = pytest.mark.django_db

COPIED = '"Copied": "\\u5df2\\u590d\\u5236"'  # 已复制, as the catalogue's JSON writes it


def _catalogue_address(client: Client, accept_language: str) -> str:
    page = client.get(reverse("login"), headers={"accept-language": accept_language}).content.decode()
    found = re.search(r'<script src="([^"]*/jsi18n/[^"]*)"', page)
    assert found is not None
    return unescape(found.group(1))


def test_each_page_names_its_language_and_the_catalogue_version(client: Client) -> None:
    assert _catalogue_address(client, "zh-CN,zh;q=0.9").endswith(f"?l=zh-hans&v={catalogue_version()}")
    assert _catalogue_address(client, "en-US,en;q=0.9").endswith(f"?l=en&v={catalogue_version()}")


def test_the_catalogue_follows_the_language_its_address_names_and_is_kept_for_a_year(client: Client) -> None:
    chinese = client.get(_catalogue_address(client, "zh-CN"), headers={"accept-language": "en-US"})
    assert COPIED in chinese.content.decode()
    assert "max-age=31536000" in chinese["Cache-Control"] and "immutable" in chinese["Cache-Control"]
    english = client.get(_catalogue_address(client, "en-US"), headers={"accept-language": "zh-CN"})
    assert COPIED not in english.content.decode()


def test_an_unknown_language_in_the_address_falls_back_to_the_requests(client: Client) -> None:
    answer = client.get(reverse("javascript-catalog") + "?l=xx-nope", headers={"accept-language": "zh-CN"})
    assert answer.status_code == 200 and COPIED in answer.content.decode()
