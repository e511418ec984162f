"""The judge's answer: `{"operations": [...]}`, parsed strictly (how each operation is then checked:
memory.extraction.judge.validation)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

OPS = ("add", "update", "retract", "clear")


class MalformedOutput(ValueError):
    """The judge's answer does not follow the contract; the whole batch fails."""


@dataclass(frozen=True)
class Operation:
    op: str
    id: int | None = None
    content: str | None = None
    sources: tuple[int, ...] = ()
    # SPEC §8 extensions of an add or an update.
    expires: str | None = None
    sensitive: bool = False
    key: str = ""
    pin: bool = False
    # SPEC §9: "user" or "project" ("" when not given: the default of the batch's scope).
    scope: str = ""

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"op": self.op}
        if self.id is not None:
            data["id"] = self.id
        if self.content is not None:
            data["content"] = self.content
        if self.sources:
            data["sources"] = list(self.sources)
        if self.expires is not None:
            data["expires"] = self.expires
        if self.sensitive:
            data["sensitive"] = True
        if self.key:
            data["key"] = self.key
        if self.pin:
            data["pin"] = True
        if self.scope:
            data["scope"] = self.scope
        return data


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _operation(index: int, item: object) -> Operation:
    where = f"operation {index + 1}"
    if not isinstance(item, dict):
        raise MalformedOutput(f"{where} is not an object")
    op = item.get("op")
    if op not in OPS:
        raise MalformedOutput(f"{where} has an unknown op {op!r}")
    _check_fields(where, op, item)
    if op in ("add", "update"):
        return Operation(
            op=op,
            id=item.get("id") if op == "update" else None,
            content=item.get("content"),
            sources=tuple(item.get("sources") or ()),
            expires=item.get("expires"),
            sensitive=bool(item.get("sensitive")),
            key=item.get("key") or "",
            pin=bool(item.get("pin")),
            scope=str(item["scope"]) if item.get("scope") in ("user", "project") else "",  # else the default
        )
    return Operation(op=op, id=item.get("id") if op == "retract" else None)


# The optional fields' types, and how a wrong one is reported.
_OPTIONAL: dict[str, tuple[type, str]] = {
    "expires": (str, 'an "expires" that is not a "YYYY-MM-DD" string'),
    "key": (str, 'a "key" that is not a string'),
    "scope": (str, 'a "scope" that is not a string'),
    "sensitive": (bool, 'a "sensitive" that is not true or false'),
    "pin": (bool, 'a "pin" that is not true or false'),
}


def _check_fields(where: str, op: str, item: dict[str, Any]) -> None:
    """Raise MalformedOutput when a field the op needs is missing, or any field has the wrong type."""
    problem = _missing(op, item) or _mistyped(item)
    if problem:
        raise MalformedOutput(f"{where} {problem}")


def _missing(op: str, item: dict[str, Any]) -> str | None:
    if op in ("update", "retract") and not _int(item.get("id")):
        return f"({op}) needs an integer id"
    if op in ("add", "update") and not isinstance(item.get("content"), str):
        return f"({op}) needs a string content"
    return None


def _mistyped(item: dict[str, Any]) -> str | None:
    sources = item.get("sources")
    if sources is not None and (not isinstance(sources, list) or not all(_int(s) for s in sources)):
        return "has sources that are not a list of message numbers"
    for name, (kind, problem) in _OPTIONAL.items():
        if item.get(name) is not None and not isinstance(item[name], kind):
            return f"has {problem}"
    return None


def parse_output(raw: str) -> list[Operation]:
    """Strictly parse `{"operations": [...]}`. Raises MalformedOutput."""
    try:
        data = json.loads(raw)
    except (TypeError, ValueError) as exc:
        raise MalformedOutput("the answer is not valid JSON") from exc
    if not isinstance(data, dict) or not isinstance(data.get("operations"), list):
        raise MalformedOutput('the answer is not an object with an "operations" list')
    operations = [_operation(i, item) for i, item in enumerate(data["operations"])]
    kinds = {o.op for o in operations}
    if "clear" in kinds and kinds & {"update", "retract"}:
        raise MalformedOutput("clear cannot be combined with update or retract")
    return operations
