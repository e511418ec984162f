"""How each kind of conversation marker is worded, at view time, in the reader's language.

A marker keeps its `text` as written (the fallback, and what older markers have) and, when its app
gives one, `data`: what happened, not its wording. The app that owns the kind registers a renderer
that turns the data into (text, link text) in the active language, so a marker reads in the
language of whoever reads it, not the one it was written in.

    register_marker_renderer("memory", render)   # render(data) -> (text, link_text)
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

logger = logging.getLogger(__name__)

MarkerRenderer = Callable[[dict[str, Any]], tuple[str, str]]

_renderers: dict[str, MarkerRenderer] = {}


class _Marker(Protocol):
    kind: str
    text: str
    link_text: str
    data: Any


def register_marker_renderer(kind: str, renderer: MarkerRenderer) -> None:
    _renderers[kind] = renderer


def wording(marker: _Marker) -> tuple[str, str]:
    """The marker's text and link text in the active language; as stored when it has no data or its
    kind has no renderer (the app was removed, or the data came from a release that worded it otherwise)."""
    renderer = _renderers.get(marker.kind)
    if renderer is not None and marker.data:
        try:
            return renderer(marker.data)
        except Exception:  # the stored wording, never a timeline that fails to render
            logger.exception("could not word a %s marker", marker.kind)
    return marker.text, marker.link_text
