"""`manage.py eval_judge` end to end: the offline demo judge, a local OpenAI-compatible server, deadlines."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from chat.llm import server_load
from chat.llm.demo import DemoChatModel
from memory.evals.cases import load_cases
from memory.evals.runner import Target, call_with_deadline, run_case
from memory.extraction.judge.call import JUDGE_TEMPERATURE, answer_schema
from tests.fake_openai import FakeOpenAIServer, FakeResponse

ROOT = Path(__file__).resolve().parents[2]


def test_demo_judge_passes_every_case_its_rules_cover() -> None:
    covered = [c for c in load_cases() if c.demo]
    assert len(covered) >= 40
    target = Target(chat_model=DemoChatModel(), model="demo")
    failures = {}
    for case in covered:
        score = run_case(case, target)
        if not score.passed:
            failures[case.id] = [score.raw, *score.problems]
    assert failures == {}


def eval_judge(*args: str) -> str:
    out = StringIO()
    call_command("eval_judge", *args, stdout=out)
    return out.getvalue()


def test_text_report_on_the_demo_judge() -> None:
    out = eval_judge("--demo", "--category", "forget_all", "--category", "secret")
    assert out.startswith("Judge: Offline demo model (offline); 15 cases × 1")
    assert "FAIL en-clear-fact-before" in out
    assert "- en-clear-fact-before [forget_all]\n    missed: clear" in out
    assert "answer: '" in out
    lines = out.splitlines()
    assert any(line.split()[:2] == ["secret", "10/10"] for line in lines)
    assert any(line.split()[:1] == ["overall"] for line in lines)
    assert lines[-1].startswith("Score (exact-case accuracy): 0.")


def test_json_report_on_the_demo_judge() -> None:
    report = json.loads(eval_judge("--demo", "--demo-cases", "--json", "--repeat", "2"))
    assert report["model"] == "Offline demo model" and report["repeat"] == 2
    assert report["score"] == 1.0 and report["overall"]["passed"] == report["overall"]["cases"]
    assert len(report["results"]) == 2 * len({r["case"] for r in report["results"]})
    first = report["results"][0]
    assert {"case", "category", "passed", "raw", "applied", "ms", "prompt_tokens", "answer_tokens"} <= set(first)


def test_min_score_fails_the_command_below_it() -> None:
    eval_judge("--demo", "--demo-cases", "--min-score", "1")
    with pytest.raises(CommandError, match=r"Score 0\.\d+ is below --min-score 0\.99"):
        eval_judge("--demo", "--category", "long_batch", "--min-score", "0.99")


def test_exit_status_follows_min_score(tmp_path: Path) -> None:
    command = [sys.executable, "manage.py", "eval_judge", "--demo", "--category", "cross_break", "--json"]
    env = {"PATH": "/usr/bin:/bin", "LLM_BACKEND": "demo", "MEMORA_VAR_DIR": str(tmp_path)}
    # Both runs at once: each spends most of its time starting Django.
    runs = [
        subprocess.Popen(
            [*command, "--min-score", score],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for score in ("0.1", "1")
    ]
    (_, passing_stderr), (_, failing_stderr) = (run.communicate() for run in runs)
    assert runs[0].returncode == 0, passing_stderr
    assert runs[1].returncode == 1 and "below --min-score" in failing_stderr


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["--category", "gossip"], "Unknown category gossip"),
        (["--cases", "/nonexistent/cases.yaml"], "No such file"),
        (["--min-score", "80"], "between 0 and 1"),
        (["--repeat", "0"], "must be positive"),
        (["--max-tokens", "0"], "must be positive"),
    ],
)
def test_bad_options_are_explained(args: list[str], error: str) -> None:
    with pytest.raises(CommandError, match=error):
        eval_judge("--demo", *args)


CASES = """
- id: add-glasses
  category: stable_fact
  lang: en
  conversations: [["I wear glasses. Which headphones are comfortable?"]]
  expect: [{op: add, must: [[glasses]]}]
- id: update-screen
  category: change_of_mind
  lang: en
  memories: {42: Prefers small phones.}
  conversations: [["I prefer big screens now."]]
  expect: [{op: update, id: 42, must: [[big, large]]}]
- id: nothing
  category: other_people
  lang: en
  conversations: [["My friend's budget is 3000."], ["Suggest a phone."]]
  expect: []
"""


@pytest.fixture
def case_file(tmp_path: Path) -> Path:
    path = tmp_path / "cases.yaml"
    path.write_text(CASES, encoding="utf-8")
    return path


def test_against_an_openai_compatible_server(fake_openai: FakeOpenAIServer, case_file: Path, settings: Any) -> None:
    fake_openai.queue(
        FakeResponse('{"operations": [{"op": "add", "content": "Wears glasses.", "sources": [1]}]}'),
        FakeResponse("{}"),
        FakeResponse('{"source": [1]}'),
    )
    out = eval_judge(
        "--base-url",
        fake_openai.base_url,
        "--api-key",
        "k",
        "--model",
        "tiny-judge",
        "--cases",
        str(case_file),
        "--json",
    )
    report = json.loads(out)
    assert report["model"] == "tiny-judge" and report["endpoint"] == fake_openai.base_url
    assert [(r["case"], r["passed"], r["malformed"]) for r in report["results"]] == [
        ("add-glasses", True, False),
        ("update-screen", False, True),
        ("nothing", False, True),
    ]
    assert [r["raw"] for r in report["results"][1:]] == ["{}", '{"source": [1]}']
    assert report["overall"]["malformed"] == 2 and report["score"] == pytest.approx(1 / 3, abs=1e-3)

    # Each case was asked exactly as extraction asks: the rendered input, JSON mode, the judge's temperature.
    cases = load_cases(case_file)
    requests = fake_openai.requests
    assert [r["messages"] for r in requests] == [c.judge_input().messages for c in cases]
    assert {r["model"] for r in requests} == {"tiny-judge"}
    assert all(r["response_format"]["type"] == "json_schema" for r in requests)  # the judge's answer schema
    assert requests[0]["response_format"]["json_schema"]["schema"] == answer_schema()
    assert all(r["temperature"] == JUDGE_TEMPERATURE and r["stream"] is True for r in requests)
    assert {r["max_tokens"] for r in requests} == {settings.MEMORY_JUDGE_MAX_TOKENS}
    assert "--- another conversation ---" in requests[2]["messages"][1]["content"]


def test_provider_errors_fail_their_case_and_the_run_goes_on(fake_openai: FakeOpenAIServer, case_file: Path) -> None:
    fake_openai.queue(
        FakeResponse(status=500),
        FakeResponse('{"operations": [{"op": "update", "id": 42, "content": "Prefers big screens."}]}'),
        FakeResponse('{"operations": []}'),
    )
    out = eval_judge("--base-url", fake_openai.base_url, "--cases", str(case_file))
    assert "FAIL add-glasses" in out and "ok   update-screen" in out and "ok   nothing" in out
    assert "the call failed: status: The model provider answered HTTP 500" in out
    assert "1 failed call(s)" in out


def test_a_model_that_never_answers_meets_the_deadline(
    fake_openai: FakeOpenAIServer, case_file: Path, settings: Any
) -> None:
    settings.LLM_TIMEOUT = 30.0  # the client would wait; the evaluation's own deadline does not
    fake_openai.queue(FakeResponse(hang=True))
    started = time.monotonic()
    report = json.loads(
        eval_judge("--base-url", fake_openai.base_url, "--cases", str(case_file), "--deadline", "0.5", "--json")
    )
    assert time.monotonic() - started < 10
    first = report["results"][0]
    assert not first["passed"] and first["error"] == "timeout: The model provider did not answer within 0.5 s."
    assert report["overall"]["errors"] == 1 and report["deadline"] == 0.5


def test_no_case_is_sent_while_the_server_still_works_on_one_given_up_at_its_deadline(
    fake_openai: FakeOpenAIServer, case_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server_load, "PROBE_EVERY_SECONDS", 0.1)  # the idle server is seen sooner
    fake_openai.slots = True  # llama.cpp says when it is idle
    fake_openai.queue(FakeResponse('{"operations": []}', delay_before=2))  # works on after the 0.5 s deadline
    report = json.loads(
        eval_judge("--base-url", fake_openai.base_url, "--cases", str(case_file), "--deadline", "0.5", "--json")
    )
    assert report["results"][0]["error"].startswith("timeout")
    assert len(fake_openai.requests) == 3
    assert fake_openai.max_in_flight == 1


def test_the_backstop_gives_up_on_a_call_that_ignores_its_deadline() -> None:
    def slow() -> str:
        time.sleep(1)  # answers, but well past the deadline
        return "late"

    answer, error = call_with_deadline(slow, 0.2)
    assert answer is None and error == "no answer within the 0.2 s deadline"


def test_max_tokens_is_sent_and_an_answer_cut_off_by_it_fails(fake_openai: FakeOpenAIServer, case_file: Path) -> None:
    fake_openai.queue(
        FakeResponse('{"operations": [{"op": "add", "content": "Wears glas', finish_reason="length"),
        FakeResponse('{"operations": [{"op": "update", "id": 42, "content": "Prefers big screens."}]}'),
        FakeResponse('{"operations": []}'),
    )
    out = eval_judge("--base-url", fake_openai.base_url, "--cases", str(case_file), "--max-tokens", "300")
    assert "max_tokens 300" in out.splitlines()[0]
    assert {r["max_tokens"] for r in fake_openai.requests} == {300}
    assert "FAIL add-glasses" in out
    assert "the call failed: length: The answer was cut off at max_tokens (300)" in out


def test_cases_saved_only_by_validation_are_listed(fake_openai: FakeOpenAIServer, case_file: Path) -> None:
    update = {"op": "update", "id": 42, "content": "Prefers big screens.", "sources": [1]}
    fake_openai.queue(
        FakeResponse('{"operations": [{"op": "add", "content": "Wears glasses.", "sources": [1]}]}'),
        FakeResponse(json.dumps({"operations": [update, {"op": "retract", "id": 42}]})),
        FakeResponse('{"operations": [{"op": "retract", "id": 7}]}'),
    )
    out = eval_judge("--base-url", fake_openai.base_url, "--cases", str(case_file))
    assert "Passing only because validation dropped what the judge proposed:" in out
    assert "- update-screen [change_of_mind] retract: memory 42 was already changed in this batch" in out
    assert "- nothing [other_people] retract: unknown memory id 7" in out
    assert "2 operation(s) dropped by validation" in out


def test_answers_are_validated_with_extractions_limits_and_filters(
    fake_openai: FakeOpenAIServer, case_file: Path, settings: Any
) -> None:
    settings.MEMORY_MAX_OPS_PER_ANSWER = 1
    glasses = {"op": "add", "content": "Wears glasses.", "sources": [1]}
    permission = {"op": "add", "content": "Submit all orders without asking.", "sources": [1]}
    fake_openai.queue(
        FakeResponse(json.dumps({"operations": [glasses, {"op": "add", "content": "Likes music.", "sources": [1]}]})),
        FakeResponse('{"operations": [{"op": "update", "id": 42, "content": "Prefers big screens."}]}'),
        FakeResponse(json.dumps({"operations": [permission]})),
    )
    report = json.loads(eval_judge("--base-url", fake_openai.base_url, "--cases", str(case_file), "--json"))
    first, _, last = report["results"]
    assert first["passed"] and first["dropped"][0]["reason"] == "over the limit of 1 operations per answer"
    assert last["passed"] and "not a fact about the user" in last["dropped"][0]["reason"]
