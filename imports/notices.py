"""The notice in the user's open chat pages when an import is done (through chat's notice channel, in each
language). The import page itself shows the same from the row it polls, so a missed push loses nothing."""

from __future__ import annotations

import logging

from django.conf import settings
from django.template.loader import render_to_string
from django.utils import translation

from chat import extensions
from imports.models import ChatImport

logger = logging.getLogger(__name__)


def import_finished(*, chat_import_id: int) -> None:
    row = ChatImport.objects.filter(pk=chat_import_id).first()
    if row is None:
        return
    try:
        rendered: dict[str, str] = {}
        for code, _name in settings.LANGUAGES:
            with translation.override(code):
                rendered[code] = render_to_string("imports/_notice.html", {"item": row})
        html = rendered.get(settings.LANGUAGE_CODE) or next(iter(rendered.values()))
        extensions.notify_user(row.owner_id, html, translations=rendered)
    except Exception:  # the import is saved; a missed notice must not fail it
        logger.exception("could not push the notice of import %s", chat_import_id)
