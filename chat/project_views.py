"""Project pages (SPEC §9 "Projects"): the list with a form to start one, a project's page (its instructions,
memory mode, conversations and, through the "project" page slot, its memories), ending one, and putting a
conversation in a project. Thin: each view reads through a selector and writes through one service."""

from __future__ import annotations

from uuid import UUID

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext_lazy as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.http import AuthedHttpRequest
from chat import projects, selectors, services
from chat.models import Project
from chat.views import sidebar_context


class ProjectForm(forms.Form):
    name = forms.CharField(label=_("Name"), max_length=Project.NAME_MAX)
    instructions = forms.CharField(
        label=_("Instructions"),
        required=False,
        max_length=Project.INSTRUCTIONS_MAX,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text=_("Sent with every message of its conversations, like a note to the assistant."),
    )
    memory_mode = forms.ChoiceField(
        label=_("Memory"),
        choices=Project.MemoryMode.choices,
        initial=Project.MemoryMode.SHARED,
        widget=forms.RadioSelect,
    )


class ProjectEndForm(forms.Form):
    memories = forms.ChoiceField(
        choices=[
            ("move", _("Keep its conversations and move its memories to you")),
            ("delete", _("Delete its conversations and memories permanently")),
        ],
        initial="move",
        widget=forms.RadioSelect,
    )


def _page(request: AuthedHttpRequest, template: str, context: dict[str, object], status: int = 200) -> HttpResponse:
    return render(request, template, {**sidebar_context(request.user), "current": None, **context}, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def project_list(request: AuthedHttpRequest) -> HttpResponse:
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        project = projects.project_create(user=request.user, **form.cleaned_data)
        return redirect("chat:project", project_id=project.pk)
    status = 400 if request.method == "POST" else 200
    context = {"projects": selectors.project_list(user=request.user), "form": form}
    return _page(request, "chat/projects/list.html", context, status)


@login_required
@require_http_methods(["GET", "POST"])
def project_detail(request: AuthedHttpRequest, project_id: int) -> HttpResponse:
    project = selectors.project_get_for_user(user=request.user, project_id=project_id)
    initial = {"name": project.name, "instructions": project.instructions, "memory_mode": project.memory_mode}
    form = ProjectForm(request.POST or None, initial=initial)
    saved = False
    if request.method == "POST" and form.is_valid():
        project = projects.project_update(project=project, **form.cleaned_data)
        saved = True
    conversations = selectors.conversation_list(user=request.user).filter(project=project, temporary=False)
    context = {"project": project, "form": form, "saved": saved, "project_conversations": conversations[:100]}
    return _page(request, "chat/projects/detail.html", context, 400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "POST"])
def project_end(request: AuthedHttpRequest, project_id: int) -> HttpResponse:
    project = selectors.project_get_for_user(user=request.user, project_id=project_id)
    form = ProjectEndForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        projects.project_end(project=project, memories=form.cleaned_data["memories"])
        return redirect("chat:projects")
    return _page(request, "chat/projects/end.html", {"project": project, "form": form}, 400 if form.errors else 200)


@login_required
@require_POST
def conversation_project(request: AuthedHttpRequest, conversation_id: UUID) -> HttpResponse:
    """Move a conversation into a project, or out of any (an empty `project`)."""
    conversation = selectors.conversation_get_for_user(user=request.user, conversation_id=conversation_id)
    value = request.POST.get("project", "")
    project = None
    if value:
        project = selectors.project_get_for_user(user=request.user, project_id=int(value) if value.isdigit() else 0)
    services.conversation_move(conversation=conversation, project=project)
    return redirect("chat:conversation", conversation_id=conversation.pk)


@login_required
@require_GET
def project_new_chat(request: AuthedHttpRequest, project_id: int) -> HttpResponse:
    """The start page, with this project chosen for the new conversation."""
    project = selectors.project_get_for_user(user=request.user, project_id=project_id)
    return redirect(f"{reverse('chat:index')}?project={project.pk}")
