"""Content negotiation for the turn route: JSON, or server-sent events when the client prefers them."""

from __future__ import annotations

EVENT_STREAM = "text/event-stream"
JSON = "application/json"


def _ranges(accept: str) -> list[tuple[str, float]]:
    """(media range, quality) for each entry of an Accept header; malformed qualities count as 0."""
    ranges = []
    for entry in accept.split(","):
        media, *params = (part.strip() for part in entry.split(";"))
        if not media:
            continue
        quality = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = min(max(float(value), 0.0), 1.0)
                except ValueError:
                    quality = 0.0
        ranges.append((media.lower(), quality))
    return ranges


def _quality(media_type: str, ranges: list[tuple[str, float]], *, wildcards: bool) -> float:
    """The quality the most specific matching range gives `media_type` (RFC 9110 §12.5.1)."""
    kind = media_type.split("/")[0]
    candidates = [(media_type, 3), (f"{kind}/*", 2), ("*/*", 1)] if wildcards else [(media_type, 3)]
    best: tuple[int, float] = (0, 0.0)
    for media, quality in ranges:
        for pattern, specificity in candidates:
            if media == pattern and specificity > best[0]:
                best = (specificity, quality)
    return best[1]


def wants_event_stream(accept: str | None) -> bool:
    """Stream only when the client names text/event-stream (any case) with a quality above 0 and at
    least that of JSON. Wildcards alone (`*/*`) get JSON, the route's default."""
    ranges = _ranges(accept or "")
    stream = _quality(EVENT_STREAM, ranges, wildcards=False)
    return stream > 0 and stream >= _quality(JSON, ranges, wildcards=True)
