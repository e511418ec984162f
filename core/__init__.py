"""The project's small shared floor, below every app: API error shapes, the typed request, SQL names,
task sending, the shared Redis cache, the Celery transports, the JavaScript catalogue, middleware and
the security checks. Nothing here imports an app; `config/` (the project's top) and the apps import it.
"""
