"""The request a signed-in user's view or API route gets.

`login_required` (pages) and the API's auth (accounts.auth: a bearer token or the signed-in session)
let only a signed-in user through, and both leave that user on `request.user`. Annotate such a view's or
route's `request` with `AuthedHttpRequest` and read `request.user` as our `User`; a view open to anyone
takes core.http.HttpRequest.
"""

from __future__ import annotations

from accounts.models import User
from core.http import HttpRequest


class AuthedHttpRequest(HttpRequest):
    user: User
