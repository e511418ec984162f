"""Accessibility checks for the browser tests: axe-core, run in the page by Playwright.

axe-core is vendored under tests/e2e/vendor/ (axe.min.js, with its licence header, and
axe-core.LICENSE; MPL-2.0, from the npm registry: see vendor/README.md). It is test tooling only and
never served to users: it is evaluated through the DevTools protocol, so the page's own
Content-Security-Policy does not apply to it.

`audit(page, "what")` checks the page as it is now at desktop (1280×900) and phone (390×844) width,
in light and dark colour schemes, and fails on any serious or critical violation. The viewport and
colour scheme are put back afterwards, so a test can carry on where it was.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

AXE_PATH = Path(__file__).resolve().parent / "vendor" / "axe.min.js"
FAILING_IMPACTS = ("serious", "critical")
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
SIZES = {"desktop": DESKTOP, "phone": PHONE}
SCHEMES = ("light", "dark")
# Set AXE_REPORT=path to append every violation (any impact) as JSON lines, for counting.
REPORT = os.environ.get("AXE_REPORT", "")

_source: str | None = None


def axe_source() -> str:
    global _source
    if _source is None:
        _source = AXE_PATH.read_text(encoding="utf-8")
    return _source


@dataclass
class Violation:
    rule: str
    impact: str
    help: str
    targets: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return f"{self.impact} {self.rule}: {self.help} ({', '.join(self.targets[:4])})"


def run_axe(page: Any) -> list[Violation]:
    """axe's violations for the page in its current viewport and colour scheme."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source())
    # WCAG 2.x A/AA plus axe's best practices (landmarks, one h1, ...). No preload: axe would copy the
    # page's stylesheets into <style> elements (for one orientation rule), which the page's
    # Content-Security-Policy refuses, on Django admin's pages among others.
    options = {"resultTypes": ["violations"], "runOnly": {"type": "tag", "values": [
        "wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice",
    ]}, "preload": False}  # fmt: skip
    result = page.evaluate("options => window.axe.run(document, options)", options)
    return [
        Violation(
            rule=v["id"],
            impact=v.get("impact") or "minor",
            help=v["help"],
            targets=[", ".join(map(str, node["target"])) for node in v["nodes"]],
        )
        for v in result["violations"]
    ]


# Two frames let layout and media-query listeners catch up with a new viewport size or colour scheme;
# then the transitions that started are taken to their end at once (Web Animations' finish()): axe checks
# the state the page settles in, without waiting for it, or drawing the frames in between. An endless
# animation cannot be finished and is checked as it is.
SETTLED = """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {
    for (const animation of document.getAnimations()) {
        try { animation.finish(); } catch (endless) { /* an infinite iteration count */ }
    }
    done(null);
})))"""


def settle(page: Any) -> None:
    """Let layout, transitions and media-query listeners catch up with a new viewport size or colour scheme."""
    page.evaluate(SETTLED)


def audit(page: Any, state: str) -> None:
    """Fail on any serious or critical axe violation of the current page state, at both widths and
    in both colour schemes."""
    page.wait_for_load_state()  # a page still loading would be audited half-drawn
    before = page.viewport_size
    failures: list[str] = []
    try:
        for size_name, size in SIZES.items():
            page.set_viewport_size(size)
            for scheme in SCHEMES:
                page.emulate_media(color_scheme=scheme)
                settle(page)
                violations = run_axe(page)
                _report(state, size_name, scheme, page.url, violations)
                failures += [f"[{size_name}, {scheme}] {v}" for v in violations if v.impact in FAILING_IMPACTS]
    finally:
        if before:
            page.set_viewport_size(before)
        page.emulate_media(color_scheme="light")
    assert not failures, f"accessibility violations on {state} ({page.url}):\n" + "\n".join(failures)


def _report(state: str, size: str, scheme: str, url: str, violations: list[Violation]) -> None:
    if not REPORT:
        return
    with open(REPORT, "a", encoding="utf-8") as out:
        for v in violations:
            row = {"state": state, "size": size, "scheme": scheme, "url": url, "rule": v.rule, "impact": v.impact}
            out.write(json.dumps(row) + "\n")
