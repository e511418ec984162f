"""Assistant replies: Markdown rendered, then sanitised, so nothing in a reply can run."""

from __future__ import annotations

from html.parser import HTMLParser

from chat.markdown import render_markdown


class Elements(HTMLParser):
    def __init__(self, html: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))


def assert_inert(html: str) -> None:
    for tag, attrs in Elements(html).elements:
        assert tag not in {"script", "img", "iframe", "style", "object", "svg"}, tag
        assert not [a for a in attrs if a.startswith("on")], (tag, attrs)
        assert not str(attrs.get("href", "")).lower().startswith(("javascript:", "data:")), attrs


def test_code_blocks_lists_and_emphasis_are_rendered() -> None:
    html = render_markdown("Some **bold** and `code`.\n\n- one\n- two\n\n```python\nprint('<b>')\n```")
    assert "<strong>bold</strong>" in html
    assert "<code>code</code>" in html
    assert "<ul>\n<li>one</li>\n<li>two</li>\n</ul>" in html
    assert "<code class=\"language-python\">print('&lt;b&gt;')" in html


def test_lists_indented_by_two_spaces_nest() -> None:
    html = render_markdown("- phones\n  - small\n    - iPhone mini\n  - light\n- laptops")
    assert html.count("<ul>") == 3
    assert "<li>small<ul>\n<li>iPhone mini</li>" in html
    assert html.index("laptops") > html.rindex("</ul>\n</li>")


def test_four_space_nesting_and_code_in_fences_are_unchanged() -> None:
    assert render_markdown("- a\n    - b") == render_markdown("- a\n  - b")
    html = render_markdown("```\n- a\n  - b\n```")
    assert "- a\n  - b" in html and "<ul>" not in html


def test_wide_code_and_tables_scroll_in_labelled_focusable_boxes() -> None:
    html = render_markdown("```python\nprint(1)\n```\n\n| a |\n|---|\n| 1 |")
    assert '<div class="code-block"><pre tabindex="0" role="region" aria-label="Python code"><code' in html
    assert '<div class="table-scroll" tabindex="0" role="region" aria-label="Table"><table>' in html
    assert html.count("<div") == html.count("</div>") == 2


def test_links_open_in_a_new_tab_without_passing_authority() -> None:
    html = render_markdown("[docs](https://example.com/a)")
    assert html == '<p><a href="https://example.com/a" target="_blank" rel="nofollow noopener">docs</a></p>'


def test_a_script_tag_in_a_reply_is_inert() -> None:
    html = render_markdown("Look: <script>alert(document.cookie)</script> done")
    assert_inert(html)
    assert "&lt;script&gt;" in html  # shown as the text the model wrote


def test_an_onerror_attribute_in_a_reply_is_inert() -> None:
    html = render_markdown(
        '<img src=x onerror="alert(1)">\n\n<div onclick=alert(1)>hi</div>\n\ntext <b onmouseover=alert(1)>x</b>'
    )
    assert_inert(html)


def test_javascript_links_lose_their_href() -> None:
    html = render_markdown("[click](javascript:alert(1)) and [data](data:text/html;base64,PHNjcmlwdD4=)")
    assert_inert(html)


def test_raw_html_inside_markdown_structures_stays_inert() -> None:
    html = render_markdown(
        "- <svg onload=alert(1)>\n\n"
        "> <iframe src=https://evil.example></iframe>\n\n"
        "| a |\n|---|\n| <img src=x onerror=alert(1)> |"
    )
    assert_inert(html)
