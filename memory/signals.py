"""Signals the memory app sends. Receivers run after the transaction that changed memories commits."""

from django.dispatch import Signal

# Sent with: user_id, run_id, changes (a list of memory.changes.MemoryChange, in the order applied),
# after an extraction run that changed the user's memories committed.
memories_changed = Signal()
