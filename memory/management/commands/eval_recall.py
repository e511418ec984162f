"""`python manage.py eval_recall`: measure which memories a turn's block holds.

Runs the recall golden set (memory/evals/recall.yaml) for a user of 50 and of 300 memories and prints,
per policy, the recall of the relevant memories (cases a word overlap can find, and cases related only
in meaning) and the memory characters per turn: the previous release's policy (newest first within the
budget), this release's lexical ranking, and with `--embeddings` the same with an embeddings endpoint.
Nothing is written to the database. The lexical run is offline.

    python manage.py eval_recall
    python manage.py eval_recall --embeddings --model nomic-embed-text --base-url http://127.0.0.1:11434/v1
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test import override_settings

from chat.llm import LLMError, get_embedder
from memory.evals.recall_set import RECALL_PATH, Embed, evaluate, load


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


class Command(BaseCommand):
    help = "Score memory recall on the golden set (no database writes). Exit status 1 below --min-recall."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--embeddings", action="store_true", help="also rank with an embeddings endpoint")
        parser.add_argument("--model", default="", help="embedding model (default: EMBEDDING_MODEL)")
        parser.add_argument(
            "--base-url", default="", help="its endpoint (default: EMBEDDING_BASE_URL, else OPENAI_BASE_URL)"
        )
        parser.add_argument("--api-key", default="", help="its API key (default: EMBEDDING_API_KEY, OPENAI_API_KEY)")
        parser.add_argument("--cases", default=str(RECALL_PATH), help="a case file (default: the golden set)")
        parser.add_argument("--budget", type=int, default=0, help="characters (default: MEMORY_PROMPT_MAX_CHARS)")
        parser.add_argument("--json", action="store_true", help="print the results as JSON")
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
            embed = self._embedder() if options["embeddings"] else None
            try:
                results = evaluate(recall_set, budget=budget, embed=embed)
            except LLMError as exc:
                raise CommandError(f"The embeddings endpoint failed: {exc}") from exc
        if options["json"]:
            self.stdout.write(json.dumps({"budget": budget, "results": results}, ensure_ascii=False, indent=2))
        else:
            self._table(results, budget, len(recall_set.cases))
        minimum = options["min_recall"]
        ours = results.get("300/relevance (lexical)", {}).get("recall_lexical")
        if minimum is not None and (ours is None or ours < minimum):
            raise CommandError(f"Lexical recall at 300 memories is {_ratio(ours)}, below {minimum}.")

    def _embedder(self) -> Embed:
        embedder = get_embedder()
        if embedder is None:
            raise CommandError("--embeddings needs a model: --model or EMBEDDING_MODEL.")

        def embed(texts: list[str]) -> list[list[float]]:
            vectors: list[list[float]] = []
            for start in range(0, len(texts), 64):
                vectors += embedder.embed(texts=texts[start : start + 64], timeout=float(settings.LLM_TIMEOUT))
            return vectors

        return embed

    def _table(self, results: dict[str, dict[str, Any]], budget: int, cases: int) -> None:
        self.stdout.write(f"Recall golden set: {cases} cases, budget {budget:,} characters\n")
        header = f"{'memories / policy':<40} {'recall':>7} {'meaning':>8} {'chars/turn':>11} {'max':>6} {'greeting':>9}"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for name, r in results.items():
            self.stdout.write(
                f"{name:<40} {_ratio(r['recall_lexical']):>7} {_ratio(r['recall_meaning']):>8} "
                f"{r['chars_per_turn']:>11,} {r['chars_max']:>6,} {r['greeting_chars_max']:>9,}"
            )
        self.stdout.write("")
        for name, r in results.items():
            if r["misses"]:
                self.stdout.write(f"{name} missed: {', '.join(r['misses'])}")
