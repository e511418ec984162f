"""Score the consolidation judge on memory/evals/consolidation.yaml: precision and recall of its merges.

python manage.py eval_consolidation           # the configured provider and MEMORY_MODEL
python manage.py eval_consolidation --demo    # the offline demo judge's rules
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from memory.consolidation import judging
from memory.evals.consolidation_set import demo_answer, load, score


class Command(BaseCommand):
    help = "Score the consolidation judge's merges on the golden set (precision: never merge what differs)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--demo", action="store_true", help="the offline demo judge instead of the provider")

    def handle(self, *args: Any, **options: Any) -> None:
        answer = demo_answer if options["demo"] else judging.ask
        cases = load()
        result = score(cases, answer).as_dict()
        result["clusters"] = len(cases)
        self.stdout.write(json.dumps(result, ensure_ascii=False, indent=2))
