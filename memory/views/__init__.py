"""Settings → Memory: see, search, add, edit, delete, restore and export what is remembered.

Thin views: parse, fetch through the user-scoped selector (another user's id is a 404), call one
service, render. Every UI element has one partial under memory/ (a row, the history, the summary,
...), used by the full page and by the HTMX responses alike (rendered and joined in
memory/fragments.py), so the live page always equals a reload. Without JavaScript every action is a
plain form: GET shows a step (edit form, confirmation) in the full page, POST redirects back to it.
"""
