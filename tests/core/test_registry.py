from __future__ import annotations

import logging

import pytest

from core.registry import Registry


def test_registering_a_name_again_replaces_its_entry_in_its_first_place() -> None:
    registry: Registry[str] = Registry("entry")
    registry.register("a", "first")
    registry.register("b", "second")
    registry.register("a", "again")
    assert registry.entries() == ["again", "second"]


def test_each_logged_skips_a_failing_entry_and_calls_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    registry: Registry[int] = Registry("divider")
    registry.register("zero", 0)
    registry.register("two", 2)
    seen: list[float] = []
    with caplog.at_level(logging.ERROR):
        registry.each_logged(lambda d: seen.append(10 / d))
    assert seen == [5.0]
    assert "divider failed" in caplog.text


def test_registered_restores_the_registry_as_it_was() -> None:
    registry: Registry[str] = Registry("entry")
    registry.register("a", "kept")
    with registry.registered("a", "for now"), registry.registered("b", "new"):
        assert registry.entries() == ["for now", "new"]
    assert registry.entries() == ["kept"]
