"""Middleware of our own."""

from __future__ import annotations

from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise, able to run in an async middleware chain.

    WhiteNoise's middleware is synchronous only: under ASGI Django would then run every request
    (chat turns included) through a thread and back, a few milliseconds on the way to each first token.
    Here a request outside the static prefix goes straight on; only a static file is looked up and
    served in a thread, by WhiteNoise as before.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Any) -> None:
        super().__init__(get_response)
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.async_mode:
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request: HttpRequest) -> Any:
        if request.path_info.startswith(self.static_prefix):
            response = await sync_to_async(self._static_response, thread_sensitive=False)(request)
            if response is not None:
                return response
        return await self.get_response(request)

    def _static_response(self, request: HttpRequest) -> Any:
        path = request.path_info
        static_file = self.find_file(path) if self.autorefresh else self.files.get(path)
        return self.serve(static_file, request) if static_file is not None else None
