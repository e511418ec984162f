"""A failed reply's error reads the same whichever language it was saved in: a plain sentence, and the
provider's own words behind "Details"."""

from __future__ import annotations

from django.utils import translation

from chat.llm.errors import error_for_people


def test_an_error_saved_in_chinese_is_split_like_one_saved_in_english() -> None:
    with translation.override("zh-hans"):
        saved = translation.gettext("The model provider answered HTTP %(status)d: %(said)s") % {
            "status": 503,
            "said": "upstream overloaded",
        }
        assert error_for_people(saved) == ("模型服务自身出了问题。请稍后再试。", "HTTP 503: upstream overloaded")
    with translation.override("en"):
        sentence, words = error_for_people(saved)
    assert sentence.startswith("The model provider had a problem") and words == "HTTP 503: upstream overloaded"


def test_an_error_written_by_the_app_passes_through() -> None:
    assert error_for_people("Something went wrong while writing the reply.") == (
        "Something went wrong while writing the reply.",
        "",
    )
