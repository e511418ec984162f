"""`python manage.py eval_recall`: measure which memories a turn's block holds.

Runs the recall golden set (memory/evals/recall.yaml) for a user of 50 and of 300 memories and prints,
per policy, the recall of the relevant memories by group (word overlap, related only in meaning, a topic
many memories share, stale facts whose line must say their age), the memory characters and unpinned
memories per turn, and what greetings carry: this release's ranking with the embeddings in use (the
embedded model unless EMBEDDING_MODEL says otherwise), the same by words alone, and the previous release's
policy (newest first within the budget). Nothing is written to the database. With the embedded model it
runs offline.

    python manage.py eval_recall
    python manage.py eval_recall --check          # exit status 1 below the acceptance figures
    python manage.py eval_recall --model nomic-embed-text --base-url http://127.0.0.1:11434/v1
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test import override_settings

from chat.llm import LLMError, get_embedder
from memory.evals.recall_set import GROUPS, RECALL_PATH, Embed, evaluate, load, shortfalls


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


class Command(BaseCommand):
    help = "Score memory recall on the golden set (no database writes)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--model", default="", help='embedding model (default: EMBEDDING_MODEL; "off": words alone)'
        )
        parser.add_argument(
            "--base-url", default="", help="its endpoint (default: EMBEDDING_BASE_URL, else OPENAI_BASE_URL)"
        )
        parser.add_argument("--api-key", default="", help="its API key (default: EMBEDDING_API_KEY, OPENAI_API_KEY)")
        parser.add_argument("--cases", default=str(RECALL_PATH), help="a case file (default: the golden set)")
        parser.add_argument("--budget", type=int, default=0, help="characters (default: MEMORY_PROMPT_MAX_CHARS)")
        parser.add_argument("--json", action="store_true", help="print the results as JSON")
        parser.add_argument("--check", action="store_true", help="fail unless the embedded policy meets the bar")
        parser.add_argument(
            "--min-recall", type=float, default=None, help="fail unless lexical recall at 300 memories reaches this"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        recall_set = load(Path(options["cases"]))
        budget = options["budget"] or settings.MEMORY_PROMPT_MAX_CHARS
        overrides = {
            name: options[option]
            for name, option in (("EMBEDDING_MODEL", "model"), ("EMBEDDING_BASE_URL", "base_url"))
            if options[option]
        }
        if options["api_key"]:
            overrides["EMBEDDING_API_KEY"] = options["api_key"]
        with override_settings(**overrides):
            embedder = get_embedder()
            label = f"embedded ({embedder.model})" if embedder is not None else ""
            try:
                results = evaluate(recall_set, budget=budget, embed=self._embed() if label else None, label=label)
            except LLMError as exc:
                raise CommandError(f"The embeddings failed: {exc}") from exc
        if options["json"]:
            payload = {"budget": budget, "embedded": label, "results": results}
            self.stdout.write(json.dumps(payload, ensure_ascii=False, indent=2))
        else:
            self._table(results, budget, len(recall_set.cases))
        minimum = options["min_recall"]
        ours = results["300/lexical"]["recall_lexical"]
        if minimum is not None and (ours is None or ours < minimum):
            raise CommandError(f"Lexical recall at 300 memories is {_ratio(ours)}, below {minimum}.")
        if options["check"]:
            if not label:
                raise CommandError("--check needs embeddings (EMBEDDING_MODEL is off or the model cannot load).")
            problems = shortfalls(results, label)
            if problems:
                raise CommandError("Below the bar: " + "; ".join(problems))

    def _embed(self) -> Embed:
        embedder = get_embedder()
        assert embedder is not None

        def embed(texts: list[str], query: bool) -> list[list[float]]:
            vectors: list[list[float]] = []
            for start in range(0, len(texts), 64):
                batch = texts[start : start + 64]
                vectors += embedder.embed(texts=batch, timeout=float(settings.LLM_TIMEOUT), query=query)
            return vectors

        return embed

    def _table(self, results: dict[str, dict[str, Any]], budget: int, cases: int) -> None:
        self.stdout.write(f"Recall golden set: {cases} cases, budget {budget:,} characters\n")
        columns = "".join(f" {g:>8}" for g in GROUPS)
        header = f"{'memories / policy':<48}{columns} {'chars/turn':>11} {'memory':>7} {'unpinned':>9} {'greeting':>9}"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for name, r in results.items():
            recalls = "".join(f" {_ratio(r[f'recall_{g}']):>8}" for g in GROUPS)
            self.stdout.write(
                f"{name:<48}{recalls} {r['chars_per_turn']:>11,} {r['memory_chars_per_turn']:>7,}"
                f" {r['unpinned_per_turn'] or 0:>9.1f}"
                f" {r['greeting_unpinned_max']:>9}"
            )
        self.stdout.write(
            "\n(chars/turn: the block, headers included; memory: its memory lines; greeting: the most unpinned"
            " memories a greeting carries)\n"
        )
        for name, r in results.items():
            if r["misses"]:
                self.stdout.write(f"{name} missed: {', '.join(r['misses'])}")
