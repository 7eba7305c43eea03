"""A workflow's graph drawn as SVG for the console: each step a box (name, type, a short summary of its config and
its counts), each transition an arrow labelled with its branch or wait outcome, laid out top-down by depth.

1. `rows`: a step's row is its longest distance from a step nothing leads into (the TRIGGER, and any step left
   unconnected), so every arrow points down, even one that skips a row.
2. Within a row, steps stand in the order of where their predecessors stand (then the order they were made in),
   which keeps a branch's two arms under it and arrows from crossing in the common cases.
3. The drawing has a `viewBox` and no fixed size: it scales to the width it is given, a phone's included.
"""

from collections.abc import Iterable
from urllib.parse import urlsplit

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from workflows.models import StepType, WorkflowStep, WorkflowTransition

BOX_WIDTH, BOX_HEIGHT = 240, 92
GAP_X, GAP_Y, MARGIN = 40, 64, 16
# Characters of 13 px text that fit a box's width (a little under its width over the average glyph's).
LINE_CHARS = 30
UNITS = ((86400, "day"), (3600, "hour"), (60, "minute"), (1, "second"))


def rows(step_ids: list, edges: Iterable[tuple]) -> dict:
    """Step id -> row: its longest distance from a step with no incoming transition (the graph has no loops)."""
    edges = [(source, target) for source, target in edges if source in step_ids and target in step_ids]
    incoming = {step: 0 for step in step_ids}
    following: dict = {}
    for source, target in edges:
        incoming[target] += 1
        following.setdefault(source, []).append(target)
    row = {step: 0 for step in step_ids}
    ready = [step for step in step_ids if incoming[step] == 0]
    while ready:
        step = ready.pop(0)
        for target in following.get(step, ()):
            row[target] = max(row[target], row[step] + 1)
            incoming[target] -= 1
            if incoming[target] == 0:
                ready.append(target)
    return row


def places(step_ids: list, edges: list[tuple]) -> dict:
    """Step id -> (row, column), columns counted from 0 in each row; `step_ids` in creation order."""
    row = rows(step_ids, edges)
    order = {step: index for index, step in enumerate(step_ids)}
    parents: dict = {}
    for source, target in edges:
        if source in order and target in order:
            parents.setdefault(target, []).append(source)
    placed: dict = {}
    for depth in sorted(set(row.values())):
        members = [step for step in step_ids if row[step] == depth]

        def where(step):
            columns = [placed[parent][1] for parent in parents.get(step, ()) if parent in placed]
            return (sum(columns) / len(columns) if columns else -1, order[step])

        for column, step in enumerate(sorted(members, key=where)):
            placed[step] = (depth, column)
    return placed


def _duration(seconds: int) -> str:
    for size, unit in UNITS:
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    return f"{seconds} seconds"


def summary(step: WorkflowStep) -> str:
    """What the step does, in a few words, from its config."""
    config = step.config or {}
    if step.type == StepType.TRIGGER:
        return f"on {config['eventName']}" if config.get("eventName") else "started by hand"
    if step.type == StepType.SEND_EMAIL:
        recipient = config.get("recipient") or {}
        to = recipient.get("email") if recipient.get("type") == "CUSTOM" else "the contact"
        return f"{step.template.name if step.template_id else '?'} to {to}"
    if step.type == StepType.DELAY:
        return f"for {config.get('amount')} {config.get('unit')}"
    if step.type == StepType.WAIT_FOR_EVENT:
        timeout = f", at most {_duration(config['timeout'])}" if config.get("timeout") else ""
        return f"for {config.get('eventName')}{timeout}"
    if step.type == StepType.CONDITION:
        value = config.get("value")
        return " ".join(str(part) for part in (config.get("field"), config.get("operator"), value) if part is not None)
    if step.type == StepType.WEBHOOK:
        return f"{config.get('method', 'POST')} {urlsplit(config.get('url', '')).hostname or ''}"
    if step.type == StepType.UPDATE_CONTACT:
        parts = [f"set {', '.join(config['updates'])}"] if config.get("updates") else []
        if config.get("subscriptionAction", "none") != "none":
            parts.append(config["subscriptionAction"])
        return "; ".join(parts)
    return config.get("reason") or "end"


def _cut(text: str, length: int = LINE_CHARS) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


NO_COUNTS = {"entered": 0, "waiting": 0, "completed": 0, "failed": 0}


def counts_line(counts: dict) -> str:
    return "{entered} in · {waiting} waiting · {completed} done · {failed} failed".format(**counts)


def svg(steps: list[WorkflowStep], transitions: list[WorkflowTransition], counts: dict) -> SafeString:
    """The graph as an inline `<svg>` with a title for screen readers (the page lists the same graph as text),
    `counts` being step id -> {entered, waiting, completed, failed}."""
    step_ids = [step.id for step in steps]
    edges = [(t.from_step_id, t.to_step_id) for t in transitions]
    placed = places(step_ids, edges)
    widths: dict = {}
    for depth, _column in placed.values():
        widths[depth] = widths.get(depth, 0) + 1
    columns = max(widths.values(), default=1)
    width = 2 * MARGIN + columns * BOX_WIDTH + (columns - 1) * GAP_X
    height = 2 * MARGIN + (max(widths, default=0) + 1) * (BOX_HEIGHT + GAP_Y) - GAP_Y

    def corner(step_id) -> tuple[int, int]:
        depth, column = placed[step_id]
        row_width = widths[depth] * BOX_WIDTH + (widths[depth] - 1) * GAP_X
        left = (width - row_width) // 2 + column * (BOX_WIDTH + GAP_X)
        return left, MARGIN + depth * (BOX_HEIGHT + GAP_Y)

    boxes = format_html_join(
        "", "{}", ((_box(step, corner(step.id), counts.get(step.id, NO_COUNTS)),) for step in steps)
    )
    arrows = format_html_join(
        "",
        "{}",
        (
            (_arrow(t, corner(t.from_step_id), corner(t.to_step_id)),)
            for t in transitions
            if t.from_step_id in placed and t.to_step_id in placed
        ),
    )
    return format_html(
        '<svg class="workflow-graph" viewBox="0 0 {} {}" role="img" aria-labelledby="workflow-graph-title" '
        'style="width:100%;max-width:{}px;height:auto" xmlns="http://www.w3.org/2000/svg">'
        '<title id="workflow-graph-title">The workflow as a graph: {} steps, {} transitions</title>'
        "<defs>"
        '<marker id="workflow-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker>'
        "</defs>{}{}</svg>",
        width, height, width, len(steps), len(transitions), arrows, boxes,
    )  # fmt: skip


def _box(step: WorkflowStep, corner: tuple[int, int], counts: dict) -> SafeString:
    x, y = corner
    fill = "#eef4f8" if step.type != StepType.TRIGGER else "#e3f1e0"
    return format_html(
        '<g class="workflow-step" data-step="{}">'
        '<rect x="{}" y="{}" width="{}" height="{}" rx="6" fill="{}" stroke="#417690" stroke-width="1.5"/>'
        '<text x="{}" y="{}" font-size="14" font-weight="bold" fill="#111">{}</text>'
        '<text x="{}" y="{}" font-size="12" fill="#333">{}</text>'
        '<text x="{}" y="{}" font-size="13" fill="#222">{}</text>'
        '<text x="{}" y="{}" font-size="12" fill="#333">{}</text>'
        "</g>",
        step.id, x, y, BOX_WIDTH, BOX_HEIGHT, fill,
        x + 10, y + 20, _cut(step.name or step.type, 28),
        x + 10, y + 39, step.type,
        x + 10, y + 58, _cut(summary(step)),
        x + 10, y + 79, counts_line(counts),
    )  # fmt: skip


def _arrow(transition: WorkflowTransition, source: tuple[int, int], target: tuple[int, int]) -> SafeString:
    """A curve from the bottom middle of the source box to the top middle of the target, labelled half-way."""
    x1, y1 = source[0] + BOX_WIDTH // 2, source[1] + BOX_HEIGHT
    x2, y2 = target[0] + BOX_WIDTH // 2, target[1]
    bend = (y2 - y1) // 2
    # The point half-way along the cubic curve below (t = 1/2): the control points' mean, weighted 1-3-3-1.
    mid_x, mid_y = (x1 + x2) / 2, (y1 + y2) / 2
    label = transition.branch or transition.wait_outcome
    text = ""
    if label:
        text = format_html(
            '<text x="{}" y="{}" font-size="13" font-weight="bold" text-anchor="middle" fill="#111" '
            'stroke="#fff" stroke-width="4" paint-order="stroke">{}</text>',
            mid_x, mid_y + 4, label,
        )  # fmt: skip
    return format_html(
        '<g class="workflow-transition" data-label="{}">'
        '<path d="M{},{} C{},{} {},{} {},{}" fill="none" stroke="#333" stroke-width="1.5" '
        'marker-end="url(#workflow-arrow)"/>{}</g>',
        label, x1, y1, x1, y1 + bend, x2, y2 - bend, x2, y2, text,
    )  # fmt: skip
