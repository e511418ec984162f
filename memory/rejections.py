"""Why a write the user makes to their memories is refused (memory.services, memory.moves, the tidy-up):
each a MemoryRejected with the HTTP status to answer. Nothing has been written when one is raised; the
API answers it with its status and `detail` (config/api.py), the pages show it in place. They are
importable from memory.services, where the writes are.
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy

DUPLICATE = gettext_lazy("An active memory already says exactly this.")

# Why a memory cannot be edited or moved: it is no longer active, or it is a suggestion (`inactive`, `suggested`).
NOT_CHANGEABLE = {
    "edit": (
        gettext_lazy("Only active memories can be edited; restore this one first."),
        gettext_lazy("This is a suggestion: keep it first, then edit it."),
    ),
    "move": (
        gettext_lazy("Only active memories can be moved; restore this one first."),
        gettext_lazy("This is a suggestion: keep it first, then move it."),
    ),
}


class MemoryRejected(Exception):
    """A write that cannot be done; nothing was written. `status` is the HTTP status to answer."""

    status = 400


class MemoryConflict(MemoryRejected):
    status = 409


class MemoryLimitReached(MemoryConflict):
    def __init__(self, limit: int) -> None:
        super().__init__(
            f"You have reached the limit of {limit:,} active memories. Delete ones you no longer need to add more."
        )
