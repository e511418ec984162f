"""Tidy-up: find memories that say one thing, contradict each other or went stale, and propose merges,
supersessions and end dates that the user reviews (SPEC §9 "Consolidation").

- memory.consolidation.candidates groups one scope's active memories into small clusters, cheaply;
- memory.consolidation.judging asks the consolidation judge about one cluster and checks its answer;
- memory.consolidation.services runs a pass and applies, rejects or undoes a proposal.

Nothing changes while a proposal waits: only Accept writes, in one transaction, and Undo reverses it.
"""
