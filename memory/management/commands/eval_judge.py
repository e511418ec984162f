"""`python manage.py eval_judge`: measure how well a model judges what to remember.

Runs the golden set (memory/evals/golden.yaml) through the judge exactly as extraction calls it and
prints, per category and overall, precision, recall and exact-case accuracy, then every failure with
the judge's raw answer. Nothing is written to the database. See memory/evals/README.md.

    python manage.py eval_judge --base-url http://127.0.0.1:11434/v1 --model qwen2.5:7b
    python manage.py eval_judge --demo --demo-cases --min-score 1
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test import override_settings

from chat.llm import get_chat_model
from memory.evals import scoring
from memory.evals.cases import CATEGORIES, GOLDEN_PATH, Case, CaseError, load_cases
from memory.evals.runner import Target, run_cases
from memory.extraction.batching import compact_prompt


def _ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


class Command(BaseCommand):
    help = "Score the memory judge on the golden set (no database writes). Exit status 1 below --min-score."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--model", default="", help="judge model (default: MEMORY_MODEL)")
        parser.add_argument("--base-url", default="", help="an OpenAI-compatible endpoint (default: OPENAI_BASE_URL)")
        parser.add_argument("--api-key", default="", help="its API key (default: OPENAI_API_KEY)")
        parser.add_argument("--demo", action="store_true", help="use the offline demo judge, whatever is configured")
        parser.add_argument("--cases", default=str(GOLDEN_PATH), help="a case file (default: the golden set)")
        parser.add_argument("--category", action="append", default=[], help="only this category (repeatable)")
        parser.add_argument("--demo-cases", action="store_true", help="only the cases the demo judge covers")
        parser.add_argument("--repeat", type=int, default=1, help="ask N times per case (models are not deterministic)")
        parser.add_argument(
            "--max-tokens", type=int, default=None, help="answer budget per call (default: MEMORY_JUDGE_MAX_TOKENS)"
        )
        parser.add_argument(
            "--deadline", type=float, default=None, help="seconds allowed per call (default: MEMORY_JUDGE_TIMEOUT)"
        )
        parser.add_argument(
            "--prompt",
            choices=("auto", "full", "compact"),
            default=None,
            help="judge prompt (default: MEMORY_JUDGE_PROMPT; auto is the compact one below an 8,192-token window)",
        )
        parser.add_argument("--json", action="store_true", help="print one JSON report instead of text")
        parser.add_argument("--min-score", type=float, default=None, help="fail below this exact-case accuracy (0–1)")

    def handle(self, *args: Any, **options: Any) -> None:
        cases = self._select(options)
        deadline, max_tokens = _limits(options)
        options.update(deadline=deadline, max_tokens=max_tokens)  # as reported
        # The judge call reads both from settings: the evaluation asks exactly as extraction would.
        with override_settings(**_overrides(options)):
            label, endpoint, scores = self._run(cases, options)
        report = scoring.summarise(scores)
        if options["json"]:
            self.stdout.write(json.dumps(self._json(report, label, endpoint, options), ensure_ascii=False, indent=2))
        else:
            self._text(report, options["repeat"])
        minimum = options["min_score"]
        if minimum is not None and report.overall.accuracy < minimum:
            raise CommandError(f"Score {report.overall.accuracy:.3f} is below --min-score {minimum:g}.")

    def _run(self, cases: list[Case], options: dict[str, Any]) -> tuple[str, str, list[scoring.CaseScore]]:
        """Every case `repeat` times against the judge the settings name: its label, endpoint and the scores."""
        deadline, max_tokens = options["deadline"], options["max_tokens"]
        chat_model = get_chat_model()
        model = options["model"] or settings.MEMORY_MODEL
        label = chat_model.label if chat_model.is_demo else model
        endpoint = "offline" if chat_model.is_demo else (settings.OPENAI_BASE_URL or "the OpenAI API")
        target = Target(chat_model=chat_model, model=model, deadline=deadline)
        prompt = "compact" if compact_prompt() else "full"
        if not options["json"]:
            self.stdout.write(
                f"Judge: {label} ({endpoint}); {len(cases)} cases × {options['repeat']}; {prompt} prompt, "
                f"max_tokens {max_tokens}, {deadline:g} s per call\n"
            )
        scores = []
        for score in run_cases(cases, target, repeat=options["repeat"]):
            scores.append(score)
            if not options["json"]:
                self._case_line(score)
        return label, endpoint, scores

    def _select(self, options: dict[str, Any]) -> list[Case]:
        try:
            cases = load_cases(options["cases"])
        except (CaseError, OSError) as exc:
            raise CommandError(str(exc)) from exc
        unknown = set(options["category"]) - set(CATEGORIES)
        if unknown:
            raise CommandError(f"Unknown category {', '.join(sorted(unknown))}; one of: {', '.join(CATEGORIES)}.")
        if options["category"]:
            cases = [c for c in cases if c.category in options["category"]]
        if options["demo_cases"]:
            cases = [c for c in cases if c.demo]
        if not cases:
            raise CommandError("No case matches.")
        return cases

    # --- text report -----------------------------------------------------------------------------

    def _case_line(self, score: scoring.CaseScore) -> None:
        verdict = "ok  " if score.passed else "FAIL"
        tokens = f"~{score.prompt_tokens}+{score.answer_tokens} tok"
        self.stdout.write(f"  {verdict} {score.case_id:<34} {score.category:<17} {score.ms:>6} ms  {tokens}")

    def _tally_line(self, name: str, tally: scoring.Tally) -> str:
        return (
            f"  {name:<17} {tally.passed:>3}/{tally.cases:<3} {tally.accuracy:>6.1%}"
            f"   {_ratio(tally.precision):>9}   {_ratio(tally.recall):>6}   {tally.malformed + tally.errors:>5}"
        )

    def _text(self, report: scoring.Report, repeat: int) -> None:
        write = self.stdout.write
        write("\nFailures:" if report.failures else "\nNo failures.")
        for score in report.failures:
            write(f"\n- {score.case_id} [{score.category}]")
            for problem in score.problems:
                write(f"    {problem}")
            if score.raw or not score.error:
                write(f"    answer: {score.raw!r}" if len(score.raw) < 2000 else f"    answer: {score.raw[:2000]!r}…")
        dropped = [s for s in report.scores if s.passed and s.dropped]
        if dropped:
            write("\nPassing only because validation dropped what the judge proposed:")
            for score in dropped:
                reasons = "; ".join(f"{d.get('op')}: {d.get('reason')}" for d in score.dropped)
                write(f"- {score.case_id} [{score.category}] {reasons}")
        write(f"\n  {'category':<17} {'exact':>7} {'':>6}   {'precision':>9}   {'recall':>6}   {'bad':>5}")
        for category in CATEGORIES:
            if category in report.by_category:
                write(self._tally_line(category, report.by_category[category]))
        for lang, tally in sorted(report.by_lang.items()):
            write(self._tally_line(f"lang {lang}", tally))
        overall = report.overall
        write(self._tally_line("overall", overall))
        write(
            f"\n{overall.malformed} answer(s) not in the requested JSON shape, {overall.errors} failed call(s), "
            f"{overall.dropped} operation(s) dropped by validation; "
            f"mean latency {overall.as_dict()['mean_ms']} ms; ~{overall.prompt_tokens} prompt and "
            f"~{overall.answer_tokens} answer tokens in all (estimated)."
        )
        if repeat > 1:
            write(self._consistency(report, repeat))
        write(f"Score (exact-case accuracy): {overall.accuracy:.3f}")

    def _consistency(self, report: scoring.Report, repeat: int) -> str:
        passes: dict[str, int] = {}
        for score in report.scores:
            passes[score.case_id] = passes.get(score.case_id, 0) + score.passed
        always = sum(1 for n in passes.values() if n == repeat)
        sometimes = sum(1 for n in passes.values() if 0 < n < repeat)
        return f"Over {repeat} runs: {always} case(s) passed every time, {sometimes} only sometimes."

    # --- JSON report -----------------------------------------------------------------------------

    def _json(self, report: scoring.Report, label: str, endpoint: str, options: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": label,
            "endpoint": endpoint,
            "cases_file": options["cases"],
            "repeat": options["repeat"],
            "max_tokens": options["max_tokens"],
            "deadline": options["deadline"],
            "score": round(report.overall.accuracy, 4),
            "overall": report.overall.as_dict(),
            "by_category": {name: tally.as_dict() for name, tally in report.by_category.items()},
            "by_lang": {name: tally.as_dict() for name, tally in report.by_lang.items()},
            "results": [score.as_dict() for score in report.scores],
        }


def _limits(options: dict[str, Any]) -> tuple[float, int]:
    """The per-call deadline and max_tokens (the settings' unless given); refused unless positive."""
    deadline = float(settings.MEMORY_JUDGE_TIMEOUT) if options["deadline"] is None else options["deadline"]
    max_tokens = int(settings.MEMORY_JUDGE_MAX_TOKENS) if options["max_tokens"] is None else options["max_tokens"]
    if options["repeat"] < 1 or deadline <= 0 or max_tokens < 1:
        raise CommandError("--repeat, --max-tokens and --deadline must be positive.")
    if options["min_score"] is not None and not 0 <= options["min_score"] <= 1:
        raise CommandError("--min-score is a share of cases, between 0 and 1 (e.g. 0.8).")
    return deadline, max_tokens


def _overrides(options: dict[str, Any]) -> dict[str, Any]:
    """The settings the judge call reads, as the options ask (deadline and max_tokens already resolved)."""
    overrides: dict[str, Any] = {
        "MEMORY_JUDGE_TIMEOUT": options["deadline"],
        "MEMORY_JUDGE_MAX_TOKENS": options["max_tokens"],
    }
    if options["prompt"]:
        overrides["MEMORY_JUDGE_PROMPT"] = options["prompt"]
    if options["demo"]:
        overrides["LLM_BACKEND"] = "demo"
    elif options["base_url"] or options["api_key"]:
        overrides["LLM_BACKEND"] = "openai"
        overrides["OPENAI_BASE_URL"] = options["base_url"] or settings.OPENAI_BASE_URL
        overrides["OPENAI_API_KEY"] = options["api_key"] or settings.OPENAI_API_KEY
    return overrides
