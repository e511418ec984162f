"""Tidy-up passes and the user's decisions on their proposals (SPEC §9 "Consolidation").

A pass asks the judge about each candidate cluster once and stores what it proposes; nothing else
changes. Accept applies one proposal in one transaction, Reject dismisses it for good (its fingerprint
stays, so the same set is never proposed again), Undo reverses an accepted one.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable

from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext as _

from accounts.models import User
from chat.llm import ChatModel, LLMError, metering
from memory import forgetting
from memory.consolidation import judging
from memory.consolidation.candidates import Cluster, user_clusters
from memory.lifecycle import memory_writes_lock
from memory.models import ConsolidationPass, ConsolidationProposal, Memory, MemorySource
from memory.rejections import MemoryConflict
from memory.selectors import in_scope
from memory.tasks import embed_memories_later

logger = logging.getLogger(__name__)
Op = ConsolidationProposal.Op
Status = ConsolidationProposal.Status


def fingerprint(op: str, ids: Iterable[int]) -> str:
    return hashlib.sha256(f"{op}:{','.join(str(i) for i in sorted(ids))}".encode()).hexdigest()


def proposals_of(*, user: User) -> QuerySet[ConsolidationProposal]:
    return ConsolidationProposal.objects.filter(owner=user)


def proposal_get_for_user(*, user: User, proposal_id: int) -> ConsolidationProposal:
    found = proposals_of(user=user).filter(pk=proposal_id).first()
    if found is None:
        raise Http404("No proposal matches the given query.")
    return found


def _store(*, user_id: int, cluster: Cluster, proposed: judging.Proposed) -> bool:
    ids = list(proposed.ids) if proposed.op != Op.SUPERSEDE else [proposed.ids[0], proposed.ids[1]]
    mark = fingerprint(proposed.op, ids)
    if ConsolidationProposal.objects.filter(owner_id=user_id, fingerprint=mark).exists():
        return False  # proposed before: waiting, accepted, rejected or undone
    ConsolidationProposal.objects.create(
        owner_id=user_id,
        project_id=cluster.project_id,
        op=proposed.op,
        member_ids=ids if proposed.op != Op.SUPERSEDE else [ids[0]],
        by_id=ids[1] if proposed.op == Op.SUPERSEDE else None,
        content=proposed.content,
        expires_at=judging.expires_at(proposed.expires) if proposed.expires else None,
        fingerprint=mark,
    )
    return True


def consolidation_pass(*, user_id: int, chat_model: ChatModel | None = None) -> ConsolidationPass:
    """One pass over the user's memories: at most one judge call per candidate cluster; a cluster whose
    answer is unusable (or whose call failed) is counted and skipped. Returns the pass with its cost."""
    record = ConsolidationPass.objects.create(owner_id=user_id)
    waiting = {i for ids in proposals_of_ids(user_id=user_id) for i in ids}
    for cluster in user_clusters(user_id=user_id):
        if set(cluster.ids) <= waiting:
            continue  # every member already waits in a proposal: asking again would cost for nothing
        record.clusters += 1
        messages = judging.render(cluster)
        record.chars += sum(len(m["content"]) for m in messages)
        record.judge_calls += 1
        try:
            with metering.counting() as calls:
                try:
                    raw = judging.ask(messages, chat_model=chat_model)
                finally:  # counted for the user whatever the answer is worth (chat.llm.metering)
                    metering.report(user_id=user_id, project_id=None, kind="consolidation", calls=calls)
            record.chars += len(raw)
            proposed = judging.parse(raw, cluster)
        except (LLMError, judging.ClusterFailed) as exc:
            logger.info("tidy-up of user %s: cluster %s skipped: %s", user_id, cluster.ids, exc)
            record.failed_clusters += 1
            continue
        with transaction.atomic():
            record.proposals += sum(_store(user_id=user_id, cluster=cluster, proposed=p) for p in proposed)
    record.finished_at = timezone.now()
    record.save()
    return record


def proposals_of_ids(*, user_id: int) -> list[list[int]]:
    rows = ConsolidationProposal.objects.filter(owner_id=user_id, status=Status.PENDING)
    return [[*p.member_ids, *([p.by_id] if p.by_id else [])] for p in rows]


def _active(*, user: User, ids: list[int]) -> list[Memory]:
    rows = list(
        Memory.objects.select_for_update().filter(owner=user, pk__in=ids, invalid_at__isnull=True, suggested=False)
    )
    if len(rows) != len(set(ids)):
        raise MemoryConflict(_("These memories changed since the suggestion was made."))
    return sorted(rows, key=lambda m: (m.created_at, m.pk))


def _merge(*, user: User, proposal: ConsolidationProposal) -> Memory:
    members = _active(user=user, ids=list(proposal.member_ids))
    now = timezone.now()
    Memory.objects.filter(pk__in=[m.pk for m in members]).update(
        invalid_at=now, invalid_reason=Memory.InvalidReason.MERGED
    )
    merged = Memory.objects.create(
        owner=user,
        content=proposal.content,
        origin=Memory.Origin.MERGED,
        project_id=members[0].project_id,
        key=next((m.key for m in members if m.key), ""),
        pinned=any(m.pinned for m in members),
        sensitive=any(m.sensitive for m in members),
        merged_from=[m.pk for m in members],
    )
    sources = set(MemorySource.objects.filter(memory__in=members).values_list("message_id", flat=True))
    MemorySource.objects.bulk_create([MemorySource(memory=merged, message_id=mid) for mid in sorted(sources)])
    return merged


def _locked(*, user: User, proposal: ConsolidationProposal, status: str) -> ConsolidationProposal:
    """The proposal read again and locked until the transaction ends; a 409 unless it is still in `status`
    (another request decided it meanwhile)."""
    proposal = ConsolidationProposal.objects.select_for_update().get(pk=proposal.pk, owner=user)
    if proposal.status != status:
        if status == Status.ACCEPTED:
            raise MemoryConflict(_("Only an accepted suggestion can be undone."))
        raise MemoryConflict(_("This suggestion was already decided."))
    return proposal


@transaction.atomic
def proposal_accept(*, user: User, proposal: ConsolidationProposal) -> ConsolidationProposal:
    """Apply a waiting proposal, in one transaction (409 when its memories changed meanwhile)."""
    memory_writes_lock(user_id=user.pk, now=timezone.now())
    proposal = _locked(user=user, proposal=proposal, status=Status.PENDING)
    if proposal.op == Op.MERGE:
        proposal.result = _merge(user=user, proposal=proposal)
    elif proposal.op == Op.SUPERSEDE:
        old, new = _active(user=user, ids=[proposal.member_ids[0], int(proposal.by_id or 0)])
        old, new = (old, new) if old.pk == proposal.member_ids[0] else (new, old)
        linked = not Memory.objects.filter(superseded_by=new).exists()  # a row supersedes at most one
        Memory.objects.filter(pk=old.pk).update(
            invalid_at=timezone.now(),
            invalid_reason=Memory.InvalidReason.SUPERSEDED,
            **({"superseded_by": new} if linked else {}),
        )
    else:
        (memory,) = _active(user=user, ids=list(proposal.member_ids))
        proposal.undo = {"expires_at": memory.expires_at.isoformat() if memory.expires_at else None}
        Memory.objects.filter(pk=memory.pk).update(expires_at=proposal.expires_at)
    proposal.status, proposal.decided_at = Status.ACCEPTED, timezone.now()
    proposal.save()
    embed_memories_later(user_id=user.pk)
    return proposal


@transaction.atomic
def proposal_reject(*, user: User, proposal: ConsolidationProposal) -> ConsolidationProposal:
    """Dismiss a waiting proposal; its fingerprint keeps the same set from being proposed again."""
    proposal = _locked(user=user, proposal=proposal, status=Status.PENDING)
    proposal.status, proposal.decided_at = Status.REJECTED, timezone.now()
    proposal.save()
    return proposal


def _reactivate(*, user: User, ids: list[int]) -> None:
    rows = Memory.objects.filter(owner=user, pk__in=ids)
    for row in rows:
        scope = Memory.objects.filter(in_scope(row.project_id), owner=user, invalid_at__isnull=True)
        if scope.filter(content=row.content).exists() or (
            row.key and scope.filter(key=row.key, suggested=False).exists()
        ):
            raise MemoryConflict(_("An active memory already says this."))
    rows.update(invalid_at=None, invalid_reason="", superseded_by=None)


@transaction.atomic
def proposal_undo(*, user: User, proposal: ConsolidationProposal) -> ConsolidationProposal:
    """Reverse an accepted proposal: a merge's originals come back and the merged memory is removed."""
    memory_writes_lock(user_id=user.pk, now=timezone.now())
    proposal = _locked(user=user, proposal=proposal, status=Status.ACCEPTED)
    if proposal.op == Op.MERGE:
        if proposal.result_id is not None:
            content = proposal.content
            forgetting.memories_forget(user_id=user.pk, memory_ids=[proposal.result_id])
            Memory.objects.filter(pk=proposal.result_id, owner=user).delete()
            proposal.refresh_from_db()
            proposal.content = content  # the user's own undo, not a forget: the suggestion keeps its sentence
        _reactivate(user=user, ids=list(proposal.member_ids))
    elif proposal.op == Op.SUPERSEDE:
        _reactivate(user=user, ids=list(proposal.member_ids))
    else:
        previous = proposal.undo.get("expires_at")
        Memory.objects.filter(owner=user, pk__in=proposal.member_ids).update(expires_at=previous)
    proposal.status, proposal.decided_at, proposal.result = Status.UNDONE, timezone.now(), None
    proposal.save()
    embed_memories_later(user_id=user.pk)
    return proposal


def undo_for_memory(*, user: User, memory: Memory) -> bool:
    """Restoring a memory an accepted tidy-up merged or superseded undoes that proposal (its originals back,
    the merged memory gone). False when no accepted proposal holds it (then it is restored as any other)."""
    if memory.invalid_reason not in (Memory.InvalidReason.MERGED, Memory.InvalidReason.SUPERSEDED):
        return False
    for proposal in proposals_of(user=user).filter(status=Status.ACCEPTED, op__in=[Op.MERGE, Op.SUPERSEDE]):
        if memory.pk in proposal.member_ids:
            proposal_undo(user=user, proposal=proposal)
            return True
    return False


def proposals_redact(forgotten: forgetting.Forgotten) -> None:
    """A memory deleted for good leaves no copy in any proposal: waiting ones about it go, decided ones
    lose their sentence (forgetting's redactor registry)."""
    gone = forgotten.ids
    for proposal in ConsolidationProposal.objects.filter(owner_id=forgotten.user_id):
        touched = gone & {*proposal.member_ids, proposal.by_id, proposal.result_id}
        if not touched:
            continue
        if proposal.status == Status.PENDING:
            proposal.delete()
        else:
            ConsolidationProposal.objects.filter(pk=proposal.pk).update(content="")
