"""The JSON API: one NinjaAPI combining each app's router (OpenAPI docs at /api/docs)."""

from ninja import NinjaAPI

from accounts.api import router as accounts_router
from accounts.auth import api_auth
from chat.api import router as chat_router
from memory.api import router as memory_router

api = NinjaAPI(title="Memora API", version="1.0", auth=api_auth, urls_namespace="api")
api.add_router("/", accounts_router)
api.add_router("/conversations", chat_router)
api.add_router("/memories", memory_router)
