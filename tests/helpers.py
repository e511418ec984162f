"""Helpers the tests import: typed factory shortcuts, messages as chat saves them, a pipeline shortcut,
and a loader that evaluates the settings afresh under a given environment."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

from accounts.models import User
from chat.models import Conversation, Message
from tests.factories import ConversationFactory, MessageFactory, UserFactory

if TYPE_CHECKING:  # imported where used: the chat and accounts tests also run without the memory app
    from memory.extraction import outcomes
    from memory.models import Memory


# Typed wrappers: factory_boy has no type information.
def make_user(**kwargs: Any) -> User:
    return cast(User, UserFactory(**kwargs))


def make_conversation(**kwargs: Any) -> Conversation:
    return cast(Conversation, ConversationFactory(**kwargs))


def make_message(**kwargs: Any) -> Message:
    return cast(Message, MessageFactory(**kwargs))


def make_memory(**kwargs: Any) -> Memory:
    from tests.memory.factories import MemoryFactory

    return cast("Memory", MemoryFactory(**kwargs))


def say(conversation: Conversation, text: str, *, reply: str = "Sure, noted.") -> Message:
    """A user message (pending, as chat saves it) followed by the assistant's reply."""
    message = make_message(conversation=conversation, role=Message.Role.USER, content=text)
    make_message(conversation=conversation, role=Message.Role.ASSISTANT, content=reply)
    return message


def run(user: Any, *, up_to: Message | None = None, trigger: str = "flush", **kwargs: Any) -> outcomes.Result:
    """One extraction run for `user`, as a flush (or `trigger`) up to the message `up_to`."""
    from memory.extraction import batches

    return batches.extract(user_id=user.pk, trigger=trigger, up_to_message_id=up_to.pk if up_to else None, **kwargs)


SETTINGS_PACKAGE = "config.settings"


def _settings_modules() -> dict[str, Any]:
    return {
        name: module
        for name, module in sys.modules.items()
        if name == SETTINGS_PACKAGE or name.startswith(SETTINGS_PACKAGE + ".")
    }


def load_settings(module: str = SETTINGS_PACKAGE) -> dict[str, Any]:
    """Evaluate the settings `module` afresh under the current environment; returns its names.
    The running process keeps its own settings: the modules imported here are put back afterwards."""
    saved = _settings_modules()
    for name in saved:
        del sys.modules[name]
    try:
        return dict(vars(importlib.import_module(module)))
    finally:
        for name in _settings_modules():
            del sys.modules[name]
        sys.modules.update(saved)
        config = sys.modules["config"]
        if SETTINGS_PACKAGE in saved:
            config.settings = saved[SETTINGS_PACKAGE]  # type: ignore[attr-defined]


def settings_loader(
    monkeypatch: pytest.MonkeyPatch, var_dir: Path, *, cleared: Iterable[str]
) -> Callable[..., dict[str, Any]]:
    """For a `load` fixture: `load(NAME="value", ...)` evaluates config.settings with the variables in
    `cleared` unset, MEMORA_VAR_DIR at `var_dir`, and the given variables set."""
    for name in cleared:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEMORA_VAR_DIR", str(var_dir))

    def load_with(**env: str) -> dict[str, Any]:
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        return load_settings()

    return load_with
