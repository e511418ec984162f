"""What the demo chat model says about the flush tool's result (memory/tools.py, written for the model),
in the user's language: the demo model's result wording hook (chat.extensions, memory/apps.py)."""

from __future__ import annotations

import re

from django.utils.translation import gettext

from chat.llm.demo import sentence_separator

_CHANGE = re.compile(r"(Remembered|Updated|Forgot): (.+?)\.(?= (?:Remembered|Updated|Forgot)[: ]| Some of| ?$)")


def _outcomes() -> dict[str, str]:
    from memory import tools  # the tool module imports the pipeline; only needed once a result is relayed

    return {
        tools.NOTHING_WORTH_KEEPING: gettext("I looked at your recent messages: nothing in them needs remembering."),
        tools.NOTHING_PENDING: gettext("There was nothing new to look at, so nothing changed."),
        tools.BUSY: gettext("Memory is being updated right now; your message will be looked at shortly."),
        tools.FAILED: gettext("Updating memory failed this time; nothing was remembered."),
        tools.BACKING_OFF: gettext("Updating memory failed a moment ago; your message will be looked at shortly."),
        tools.ABANDONED: gettext("Your memories changed meanwhile, so nothing was saved from this look."),
        tools.MEMORY_OFF: gettext("Memory is off, so nothing was saved. You can turn it on under Settings → Memory."),
        tools.TEMPORARY: gettext("This is a temporary chat: nothing from it is remembered."),
    }


def _change(verb: str, content: str) -> str:
    if verb == "Forgot" and content == "everything":
        return gettext("Forgot everything.")
    if verb == "Remembered":
        return gettext("Remembered: %(memory)s.") % {"memory": content}
    if verb == "Updated":
        return gettext("Updated: %(memory)s.") % {"memory": content}
    return gettext("Forgot: %(memory)s.") % {"memory": content}


def demo_result_wording(text: str) -> str | None:
    """The flush tool's result (memory/tools.py, written for the model) in the user's language."""
    if text in _outcomes():
        return _outcomes()[text]
    if not text.startswith("Memory updated."):
        return None
    items = [_change(verb, content) for verb, content in _CHANGE.findall(text)]
    if "Forgot everything." in text and not items:
        items.append(gettext("Forgot everything."))
    words = [gettext("Memory updated."), *items]
    if "Some of the messages could not be reviewed yet." in text:
        words.append(gettext("Some of your messages could not be looked at yet."))
    return sentence_separator().join(words)
