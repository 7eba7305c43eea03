"""Who uses what: one registry for every kind of thing that other records can use (a contact field, an event name,
a template, a segment, a sender domain), so that the app owning the thing lists what uses it (`used_in`) and refuses
to delete it while anything does (`refuse_delete_while_used`) without importing the apps whose records use it.

An app whose records use such a thing registers a finder in its `AppConfig.ready`, under the thing and the kind of
its records (a key of `USED_BY`):

    usage_finders.register(campaigns_using_field, key=("field", "campaigns"))
"""

from collections.abc import Callable
from typing import Any

from core.errors import Conflict
from core.hooks import Hook

# What can be used, and the kinds of records that can use it, in the order the API lists them.
USED_BY: dict[str, tuple[str, ...]] = {
    "field": ("segments", "campaigns", "workflows", "templates"),
    "event": ("segments", "workflows"),
    "template": ("campaigns", "workflowSteps"),
    "segment": ("segments", "campaigns"),
    "domain": ("templates",),
}

usage_finders: Hook[Callable[[Any, Any], list[dict]]] = Hook(
    "core.usage.usage_finders",
    """`finder(project, thing) -> list[dict]`, registered under `(thing kind, record kind)` of USED_BY: the project's
    records of that kind using the thing (a field path such as `data.plan`, an event name, a `Template`, a `Segment`,
    a domain name), each as the API lists it: `{id, name}` for fields and events; `{id, name, status}` (campaigns) or
    `{workflowId, workflowName, stepId}` (workflow steps) for templates; `{id, name}`, and `status` for campaigns,
    for segments; `{type, id, name, from}` for a domain, whose `from` address is at the domain or a subdomain.""",
    keys=[(thing, kind) for thing, kinds in USED_BY.items() for kind in kinds],
)


def used_in(thing: str, *, project, of) -> dict[str, list[dict]]:
    """What uses `of`, a `thing` of USED_BY: each kind of record, in order, with its list (empty when no app of that
    kind registered a finder)."""
    finders = usage_finders.implementations
    return {kind: finders[thing, kind](project, of) if (thing, kind) in finders else [] for kind in USED_BY[thing]}


def refuse_delete_while_used(used: dict[str, list], message: str, **details: Any) -> None:
    """The one answer to deleting a thing `used_in` found in use: 409 CONFLICT with `message` and `details`."""
    if any(used.values()):
        raise Conflict(message, details=details)
