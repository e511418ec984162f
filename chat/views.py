"""Chat pages. Thin: fetch through a user-scoped selector, call one service, render.

Each UI element has one partial (chat/_message.html, chat/_conversation_item.html, ...), used by the
full page, the HTMX responses below and the WebSocket pushes in chat/consumers.py alike (rendered
through chat/fragments.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any
from urllib.parse import urlencode
from uuid import UUID

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import Resolver404, resolve, reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from accounts.http import AuthedHttpRequest
from accounts.models import User
from chat import extensions, markers, selectors, services, sidebar, versions
from chat.export import markdown_response
from chat.forms import ConversationCreateForm, ConversationRenameForm
from chat.fragments import mark_latest, message_html
from chat.models import Conversation, Message
from chat.search.query import SearchRejected
from chat.search.query import search as search_conversations
from core.http import HttpRequest

DRAFT_SESSION_KEY = "chat-first-message:{}"
SUGGESTIONS = [
    _("I’ve always liked small phones — they’re easy to use one-handed."),
    _("Suggest a weekend trip for someone who hates crowds."),
    _("Explain Python decorators with a short example."),
]


def with_retry(messages: Iterable[Message]) -> list[Message]:
    """The messages, the latest marked for a Retry button when it is a reply that failed or was
    stopped: Retry writes that reply again in place (chat.turn.transactions.turn_retry_start)."""
    items = list(messages)
    if items:
        mark_latest(items[-1])
    return items


def sidebar_context(
    user: User,
    *,
    current: Conversation | None = None,
    before: tuple[datetime, UUID] | None = None,
    group: str = "",
    title: str = "",
) -> dict[str, Any]:
    """The conversation list's first page (or the one after `before`, continuing date group `group`), the
    link to the next, and (first page) the pinned conversations and the projects; `title` filters them all
    (chat/sidebar.py says how the list is ordered)."""
    page, after = selectors.conversation_sidebar_page(user=user, current=current, before=before, title=title)
    conversations = sidebar.with_headings(page, previous=group)
    more = ""
    if after is not None:
        cursor = {"before": after[0].isoformat(), "id": after[1], "group": getattr(conversations[-1], "group", "")}
        if title:
            cursor["title"] = title
        more = f"{reverse('chat:conversation_more')}?{urlencode(cursor)}"
    context: dict[str, Any] = {"conversations": conversations, "conversations_more": more, "sidebar_filter": title}
    if before is None:  # pinned conversations, then the projects (each with its newest), lead the first page
        context["pinned_conversations"] = selectors.conversation_pinned(user=user, title=title)
        context["sidebar_projects"] = selectors.project_sidebar(user=user, current=current, title=title)
        if title.strip():
            context["sidebar_count"] = selectors.conversation_sidebar_count(user=user, current=current, title=title)
    return context


def layout_sidebar(user: User) -> dict[str, Any]:
    """The sidebar for a page drawn in the chat's layout that is not a conversation (accounts.layout)."""
    return {**sidebar_context(user), "current": None}


def _chat_context(request: AuthedHttpRequest, conversation: Conversation | None, *, title: str = "") -> dict[str, Any]:
    sidebar = sidebar_context(request.user, current=conversation, title=title)
    # The start page's and the header's choice of project: every project, whatever the filter.
    projects = selectors.project_sidebar(user=request.user) if title.strip() else sidebar["sidebar_projects"]
    return {
        **sidebar,
        "all_projects": projects,
        "current": conversation,
        "suggestions": SUGGESTIONS,
        "temporary_hours": settings.CHAT_TEMPORARY_HOURS,
    }


@login_required
@require_GET
def conversation_more(request: AuthedHttpRequest) -> HttpResponse:
    """The sidebar's next page: its items and, when there are more, the next "Show more" button."""
    try:
        before = (datetime.fromisoformat(request.GET["before"]), UUID(request.GET["id"]))
    except (KeyError, ValueError):
        return HttpResponseBadRequest(_("Expected the `before` and `id` of the last conversation shown."))
    group, title = request.GET.get("group", ""), request.GET.get("title", "")
    context = sidebar_context(request.user, before=before, group=group, title=title)
    return render(request, "chat/_conversation_more.html", context)


def _open_conversation(request: AuthedHttpRequest, conversation_id: str) -> Conversation | None:
    """The conversation a page shows (aria-current in its list), when it is the user's; else none."""
    try:
        return selectors.conversation_get_for_user(user=request.user, conversation_id=UUID(conversation_id))
    except (ValueError, Http404):
        return None


@login_required
@require_GET
def conversation_nav(request: AuthedHttpRequest) -> HttpResponse:
    """The conversation list, filtered by title as it is typed (the filter box), or drawn again when a
    conversation changed in another page (chat.sidebar.sidebar_changed). Without JavaScript: the start page
    with the filtered list."""
    current = _open_conversation(request, request.GET.get("current", ""))
    title = request.GET.get("title", "")[:200]
    if not request.htmx:
        context = {**_chat_context(request, None, title=title), "form": ConversationCreateForm()}
        return render(request, "chat/index.html", context)
    context = {**sidebar_context(request.user, current=current, title=title), "current": current}
    return render(request, "chat/_sidebar_nav.html", {**context, "filter_status": "refresh" not in request.GET})


@login_required
@require_GET
def index(request: AuthedHttpRequest) -> HttpResponse:
    chosen = request.GET.get("project", "")
    form = ConversationCreateForm(
        initial={"temporary": request.GET.get("temporary") == "1", "project": int(chosen) if chosen.isdigit() else None}
    )
    return render(request, "chat/index.html", {**_chat_context(request, None), "form": form})


@login_required
@require_POST
def conversation_new(request: AuthedHttpRequest) -> HttpResponse:
    form = ConversationCreateForm(request.POST)
    if not form.is_valid():
        return render(request, "chat/index.html", {**_chat_context(request, None), "form": form}, status=400)
    if not form.cleaned_data["message"].strip():
        # A conversation starts with its first message: no empty conversations pile up.
        return redirect(reverse("chat:index") + ("?temporary=1" if form.cleaned_data["temporary"] else ""))
    chosen = form.cleaned_data["project"]
    project = selectors.project_get_for_user(user=request.user, project_id=chosen) if chosen else None
    try:
        conversation = services.conversation_create(
            user=request.user,
            temporary=form.cleaned_data["temporary"],
            model=form.cleaned_data["model"],
            project=project,
        )
    except services.UnknownModel as exc:
        form.add_error(None, str(exc))
        return render(request, "chat/index.html", {**_chat_context(request, None), "form": form}, status=400)
    # The page sends it over the WebSocket as soon as it connects, so it streams like any other.
    request.session[DRAFT_SESSION_KEY.format(conversation.pk)] = form.cleaned_data["message"]
    return redirect("chat:conversation", conversation_id=conversation.pk)


@login_required
@require_GET
def conversation_detail(request: AuthedHttpRequest, conversation_id: UUID) -> HttpResponse:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    draft = request.session.pop(DRAFT_SESSION_KEY.format(conversation.pk), "")
    chat_messages = with_retry(extensions.annotate_messages(list(selectors.message_list(conversation=conversation))))
    # Opened mid-reply (the turn runs on without any page): Stop is offered, the reply follows live.
    streaming = any(m.status == Message.Status.STREAMING for m in chat_messages[-1:])
    context = {
        **_chat_context(request, conversation),
        "conversation": conversation,
        "chat_messages": markers.timeline(
            selectors.with_summary_divider(
                chat_messages, selectors.conversation_context_size(conversation=conversation)
            ),
            selectors.marker_list(conversation=conversation),
        ),
        "turn_state": "streaming" if streaming else "idle",
        "draft": draft,
    }
    return render(request, "chat/conversation.html", context)


def _page_conversation(request: AuthedHttpRequest) -> Conversation | None:
    """The conversation the page that asked shows (HTMX says its address), if any and the user's."""
    try:
        match = resolve((request.htmx.current_url_abs_path or "").split("?")[0])
    except Resolver404:
        return None
    if match.view_name != "chat:conversation":
        return None
    return _open_conversation(request, str(match.kwargs["conversation_id"]))


def _shown_in_page(request: HttpRequest, conversation: Conversation) -> bool:
    """Whether the page that asked (HTMX says its address) is the conversation's own."""
    path = request.htmx.current_url_abs_path or ""
    return path.split("?")[0] == reverse("chat:conversation", args=[conversation.pk])


@login_required
@require_http_methods(["GET", "POST"])
def conversation_rename(request: AuthedHttpRequest, conversation_id: UUID) -> HttpResponse:
    """Rename, in place of the page's title or (`place=sidebar`) of the conversation's item in the list;
    without JavaScript, on a page of its own."""
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    place, current = _rename_place(request, conversation)
    if request.method == "GET" and request.GET.get("cancel") and request.htmx:
        return _rename_cancelled(request, conversation, place=place, current=current)
    form = ConversationRenameForm(request.POST or None, initial={"title": conversation.title})
    if request.method == "POST" and form.is_valid():
        renamed = services.conversation_rename(conversation=conversation, title=form.cleaned_data["title"])
        return _renamed(request, renamed, place=place, current=current)
    return _rename_form(request, conversation, form, place=place)


def _rename_place(request: AuthedHttpRequest, conversation: Conversation) -> tuple[str, Conversation | None]:
    """Where the rename happens ("title" or "sidebar"), and the page's open conversation when it is this one."""
    place = "sidebar" if request.GET.get("place") == "sidebar" else "title"
    shown = place == "title" or (request.htmx and _shown_in_page(request, conversation))
    return place, conversation if shown else None


def _rename_cancelled(
    request: AuthedHttpRequest, conversation: Conversation, *, place: str, current: Conversation | None
) -> HttpResponse:
    if place == "sidebar":
        return render(request, "chat/_conversation_item.html", {"conversation": conversation, "current": current})
    return render(request, "chat/_title.html", {"conversation": conversation})


def _renamed(
    request: AuthedHttpRequest, conversation: Conversation, *, place: str, current: Conversation | None
) -> HttpResponse:
    if not request.htmx:
        return redirect("chat:conversation", conversation_id=conversation.pk)
    renamed: dict[str, Any] = {"conversation": conversation, "current": current, "place": place}
    return render(request, "chat/_title_renamed.html", renamed)


def _rename_form(
    request: AuthedHttpRequest, conversation: Conversation, form: ConversationRenameForm, *, place: str
) -> HttpResponse:
    if request.htmx:
        # In place of the title (or the item); a refused title comes back with its error (422, swapped by page.js).
        context: dict[str, Any] = {"conversation": conversation, "form": form, "inline": True, "place": place}
        return render(request, "chat/_rename_form.html", context, status=422 if form.is_bound else 200)
    context = {**_chat_context(request, conversation), "conversation": conversation, "form": form}
    return render(request, "chat/rename.html", context, status=400 if form.is_bound else 200)


@login_required
@require_POST
def conversation_pin(request: AuthedHttpRequest, conversation_id: UUID) -> HttpResponse:
    """Pin the conversation on top of the list, or unpin it (the conversation's menu)."""
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    services.conversation_update(conversation=conversation, pinned=not conversation.pinned)
    if request.htmx and request.POST.get("place") == "sidebar":  # from the list: the list, drawn again
        current = conversation if _shown_in_page(request, conversation) else _page_conversation(request)
        title = request.POST.get("title", "")[:200]
        context = {**sidebar_context(request.user, current=current, title=title), "current": current}
        return render(request, "chat/_sidebar_nav.html", context)
    if request.htmx:  # the list changes its groups: the page is drawn again
        return HttpResponseClientRedirect(reverse("chat:conversation", args=[conversation.pk]))
    return redirect("chat:conversation", conversation_id=conversation.pk)


@login_required
@require_GET
def conversation_export(request: AuthedHttpRequest, conversation_id: UUID) -> HttpResponse:
    """The conversation as a Markdown file (the conversation's menu)."""
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    return markdown_response(conversation)


@login_required
@require_POST
def conversation_model(request: AuthedHttpRequest, conversation_id: UUID) -> HttpResponse:
    """Switch the conversation's model, from its next reply on (the header's picker)."""
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    error = ""
    try:
        conversation = services.conversation_update(conversation=conversation, model=request.POST.get("model", ""))
    except services.UnknownModel as exc:
        error = str(exc)
    if not request.htmx:
        return redirect("chat:conversation", conversation_id=conversation.pk)
    context = {"conversation": conversation, "model_error": error, "model_changed": not error}
    return render(request, "chat/_model_status.html", context, status=422 if error else 200)


@login_required
@require_http_methods(["GET", "POST"])
def conversation_delete(request: AuthedHttpRequest, conversation_id: UUID) -> HttpResponse:
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    if request.method == "GET":  # the confirmation page, for browsers without JavaScript
        context = {**_chat_context(request, conversation), "conversation": conversation}
        return render(request, "chat/delete.html", context)
    services.conversation_delete(conversation=conversation)
    if request.htmx:
        return HttpResponseClientRedirect("/")
    return redirect("chat:index")


@login_required
@require_POST
def message_version(request: AuthedHttpRequest, conversation_id: UUID, message_id: int) -> HttpResponse:
    """Show another version of the latest reply (‹ › under it): the message, as it now reads."""
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    message = get_object_or_404(selectors.message_list(conversation=conversation), pk=message_id)
    try:
        version = int(request.POST.get("version", ""))
        message = versions.reply_version_show(reply=message, version=version)
    except (ValueError, services.TurnRejected) as exc:
        text = str(exc) if isinstance(exc, services.TurnRejected) else _("Which version?")
        return HttpResponse(text, status=409, content_type="text/plain; charset=utf-8")
    if not request.htmx:
        return redirect(reverse("chat:conversation", args=[conversation.pk]) + f"#message-{message.pk}")
    extensions.annotate_messages([message])
    return HttpResponse(message_html(message, retryable=True))


@login_required
@require_GET
def message_detail(request: AuthedHttpRequest, conversation_id: UUID, message_id: int) -> HttpResponse:
    """One message, re-fetched by a page that was loaded while its reply was still being written."""
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    messages = selectors.message_list(conversation=conversation)
    message = get_object_or_404(messages, pk=message_id)
    latest = not messages.filter(pk__gt=message.pk).exists()
    extensions.annotate_messages([message])
    return HttpResponse(message_html(message, retryable=latest))


SEARCH_SIDEBAR_HITS = 20  # while typing, in the sidebar; the page shows more
SEARCH_PAGE_HITS = 50


def _search_current(request: AuthedHttpRequest) -> Conversation | None:
    """The conversation open beside the search (searched even when temporary), when it is the user's; a
    value that is not a conversation id is ignored."""
    try:
        conversation_id = UUID(request.GET["current"])
        return selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    except (KeyError, ValueError, Http404):
        return None


@login_required
@require_GET
def search(request: AuthedHttpRequest) -> HttpResponse:
    """Search results: for the sidebar while typing (HTMX: the results partial), or as a plain page."""
    current = _search_current(request)
    text = request.GET.get("q", "")
    try:
        offset = max(0, int(request.GET.get("offset", 0)))
    except ValueError:
        offset = 0
    limit = SEARCH_SIDEBAR_HITS if request.htmx else SEARCH_PAGE_HITS
    context: dict[str, Any] = {"search_query": text, "search_current": current, "hits": [], "total": 0}
    if text.strip():
        try:
            page = search_conversations(user=request.user, text=text, limit=limit, offset=offset, current=current)
        except SearchRejected as exc:
            context["search_error"] = str(exc)
        else:
            context.update(hits=page.hits, total=page.total, searched=True)
            if offset + limit < page.total:
                context["more_offset"] = offset + limit
    if request.htmx:
        return render(request, "chat/_search_results.html", context)
    return render(request, "chat/search.html", {**_chat_context(request, current), **context})
