"""The README stays short enough to read in ten minutes, and every page's relative links, anchors,
commands, and the files and modules it names in code spans point at something that exists.

Links are checked as GitHub renders them: a relative target is a path from the page's own folder, and
`#anchor` is a heading's slug (lower case, punctuation dropped, spaces to hyphens, `-1`, `-2` for
repeats). Fenced code and inline code are not read for links.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from urllib.parse import unquote

import pytest
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 350

FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def prose_lines(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(page.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match[2])
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: Path) -> list[str]:
    targets = []
    for line in prose_lines(page.read_text(encoding="utf-8")):
        targets += LINK.findall(INLINE_CODE.sub("", line))
    return targets


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto:
            continue
        path_part, _, anchor = target.partition("#")
        path = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not path.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and path.suffix == ".md" and unquote(anchor) not in anchors(path):
            broken.append(f"{target} (no heading #{anchor} in {path.name})")
    return broken


def test_the_readme_is_at_most_350_lines() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert links(page) or page.name != "README.md", "the page links to nothing"
    assert broken_links(page) == []


def test_every_page_in_docs_is_reached_from_the_index() -> None:
    index = ROOT / "docs" / "README.md"
    linked = {(index.parent / target.partition("#")[0]).resolve() for target in links(index)}
    unlisted = [page.name for page in PAGES[1:] if page != index and page.resolve() not in linked]
    assert unlisted == []


def test_the_commands_the_readme_shows_exist() -> None:
    """`make X` is a target of the Makefile, `manage.py X` a management command, a script a file."""
    text = README.read_text(encoding="utf-8")
    targets = set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.MULTILINE))
    assert set(re.findall(r"\bmake ([a-z][\w-]*)", text)) <= targets
    shown = set(re.findall(r"manage\.py ([a-z_]+)", text))
    assert shown and shown <= set(get_commands())
    scripts = set(re.findall(r"\b((?:scripts|bench)/[\w/]+\.py)\b", text))
    assert [script for script in scripts if not (ROOT / script).exists()] == []


APPS = ("accounts", "chat", "memory", "core", "config", "usage", "imports", "connect")
# A path in a code span: a top-level folder of the project, then more (`chat/turn/agent.py`, `docs/`).
FOLDERS = (*APPS, "bench", "scripts", "tests", "docs", "locale", "static", "templates")
CODE_PATH = re.compile(r"^(?:" + "|".join(FOLDERS) + r")/\S*$")
# A dotted name in a code span: a module, a name defined in one (`chat.turn.agent.Turn`), or a model (`chat.TurnStart`).
DOTTED = re.compile(r"^(?:" + "|".join(APPS) + r")(?:\.[A-Za-z_]\w*)+(?:\(\))?$")


def code_spans(page: Path) -> list[str]:
    spans = []
    for line in prose_lines(page.read_text(encoding="utf-8")):
        spans += [span.strip("`") for span in INLINE_CODE.findall(line)]
    return spans


def module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def defined_names(source: Path) -> set[str]:
    """Top-level names a module defines (functions, classes, assignments, imports), and its classes' members."""
    names: set[str] = set()
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            if isinstance(node, ast.ClassDef):
                names |= {f"{node.name}.{member.name}" for member in node.body if hasattr(member, "name")}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
    return names


def dotted_exists(name: str) -> bool:
    parts = name.removesuffix("()").split(".")
    for cut in range(len(parts), 0, -1):
        source = module_file(parts[:cut])
        if source is None:
            continue
        rest = ".".join(parts[cut:])
        if not rest:
            return True
        if rest in defined_names(source):
            return True
        models = module_file([parts[0], "models"])  # `app.Model`, as Django names a model
        return cut == 1 and models is not None and rest in defined_names(models)
    return False


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_the_files_and_modules_a_page_names_exist(page: Path) -> None:
    spans = code_spans(page)
    missing = [span for span in spans if CODE_PATH.match(span) and not (ROOT / span.split("#")[0]).exists()]
    missing += [span for span in spans if DOTTED.match(span) and not span.endswith(".py") and not dotted_exists(span)]
    assert missing == []


ENV_READ = re.compile(
    r"""(?:environ\.get|getenv|env_int|env_bool|env_float|environ\.setdefault)\(\s*["']([A-Z][A-Z0-9_]+)["']"""
    r"""|environ\[["']([A-Z][A-Z0-9_]+)["']\](?!\s*=[^=])"""
)


def test_every_environment_variable_the_code_reads_is_in_the_configuration_page() -> None:
    configuration = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    read: set[str] = set()
    for source in ROOT.rglob("*.py"):
        if not {".venv", "var", "node_modules"} & set(source.relative_to(ROOT).parts):
            read |= {a or b for a, b in ENV_READ.findall(source.read_text(encoding="utf-8"))}
    assert len(read) > 50
    assert sorted(name for name in read if f"`{name}`" not in configuration) == []


def test_the_slugs_follow_github() -> None:
    assert slug("The contract: `/api/docs`") == "the-contract-apidocs"
    assert slug("Settings → Memory") == "settings--memory"
    assert slug("中文演示（两分钟，离线）") == "中文演示两分钟离线"
    assert slug("Production: more than one process") == "production-more-than-one-process"
