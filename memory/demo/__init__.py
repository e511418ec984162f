"""Memory for the offline demo model — a demo, not a language model: its judge (`judge`, with the
sentence rules in `rules`) and what it says about the flush tool's result (`wording`). Nothing here is
used with a real provider."""
