"""Which events concern a project's workflows, known cheaply on the tracking path.

Every recorded event passes through `on_events_recorded`; most concern no workflow, and for those the answer must
cost next to nothing. Each process keeps, per project, the enabled EVENT triggers by event name and the event names
its WAIT_FOR_EVENT steps wait for (`ProjectTriggers`), and checks the copy's version against the project's at most
every `CHECK_SECONDS`:

- with Redis as the cache, the version is a token that every change of a workflow or a step replaces after its
  commit (`triggers_changed`): one Redis read;
- with a cache of the process's own (local memory, the development default), where a token would change in one
  process only, the version is read from the workflows' rows (their number and latest `updated_at`, which every
  change moves): one small query.

A change waits `CHECK_SECONDS` after its commit before it is answered: by then every process's copy is either
checked again or new, so an event recorded after the answer, in whichever process, sees the change (a workflow
enabled by a PATCH starts for the very next matching event).
"""

import logging
import threading
import time
import uuid
from dataclasses import dataclass, field

from django.core.cache import caches
from django.db.models import Count, Max

from core.cache import redis_client
from core.commit import after_commit
from workflows.models import StepType, TriggerType, Workflow, WorkflowStep


@dataclass(frozen=True)
class Trigger:
    workflow_id: uuid.UUID
    trigger_step_id: uuid.UUID
    allow_reentry: bool


@dataclass
class ProjectTriggers:
    triggers: dict[str, list[Trigger]] = field(default_factory=dict)
    waited: frozenset[str] = frozenset()
    version: bytes | str | None = None
    checked_at: float = 0.0


logger = logging.getLogger(__name__)
# How long a process trusts its copy before checking the version again, and so how long a change waits before it is
# answered: a version read on every batch of events would cost a round trip on the tracking path.
CHECK_SECONDS = 0.1
_copies: dict = {}
_lock = threading.Lock()


def _version_key(project_id) -> str:
    return caches["default"].make_and_validate_key(f"workflows:triggers:{project_id}")


def triggers_changed(*, project_id) -> None:
    """A workflow or step of the project changed: drop this process's copy now and, once the change is committed,
    replace the version token so the other processes reload theirs (replaced before the commit, a process could
    reload the old state under the new token). Without Redis the rows themselves are the version."""
    _copies.pop(project_id, None)

    def bump() -> None:
        _copies.pop(project_id, None)
        client = redis_client(caches["default"])
        if client is not None:
            client.set(_version_key(project_id), uuid.uuid4().hex)
        time.sleep(CHECK_SECONDS)  # until every copy checked before the change has expired

    after_commit(bump, what=f"mark the workflow triggers of project {project_id} changed (a cache miss reloads)")


def _load(project_id, version: bytes | str | None, checked_at: float = 0.0) -> ProjectTriggers:
    # `checked_at`: when `version` was read (before the rows), which is how long the copy is trusted from.
    triggers: dict[str, list[Trigger]] = {}
    enabled = (
        Workflow.objects.filter(project_id=project_id, enabled=True, trigger_type=TriggerType.EVENT)
        .exclude(event_name="")
        .values_list("event_name", "id", "allow_reentry")
    )
    trigger_steps = dict(
        WorkflowStep.objects.filter(
            workflow__project_id=project_id, workflow__enabled=True, type=StepType.TRIGGER
        ).values_list("workflow_id", "id")
    )
    for event_name, workflow_id, allow_reentry in enabled:
        if workflow_id in trigger_steps:
            triggers.setdefault(event_name, []).append(Trigger(workflow_id, trigger_steps[workflow_id], allow_reentry))
    # Steps of disabled workflows count too: their running executions go on, and wait.
    waited = WorkflowStep.objects.filter(workflow__project_id=project_id, type=StepType.WAIT_FOR_EVENT).values_list(
        "config__eventName", flat=True
    )
    return ProjectTriggers(
        triggers=triggers,
        waited=frozenset(name for name in waited if name),
        version=version,
        checked_at=checked_at,
    )


def _shared_version(client, project_id) -> bytes:
    # The Redis client itself, not the cache API, which builds a client object per call (core.cache.redis_client):
    # this read is on the path of every tracked event.
    key = _version_key(project_id)
    version = client.get(key)
    if version is None:
        # A cold or flushed cache: start a token, so every process reloads once and then agrees.
        client.set(key, uuid.uuid4().hex, nx=True)
        version = client.get(key)
    return version


def _rows_version(project_id) -> str:
    # A deleted workflow lowers the count; every other change of a workflow or its steps moves its `updated_at`.
    rows = Workflow.objects.filter(project_id=project_id).aggregate(count=Count("id"), last=Max("updated_at"))
    return f"{rows['count']}:{rows['last'].isoformat() if rows['last'] else ''}"


def project_triggers(project_id) -> ProjectTriggers:
    """This process's copy of the project's triggers and waited-for event names, checked against the project's
    version at most every `CHECK_SECONDS` and reloaded when they differ."""
    copy = _copies.get(project_id)
    now = time.monotonic()
    if copy is not None and now - copy.checked_at < CHECK_SECONDS:
        return copy
    client = redis_client(caches["default"])
    try:
        version = _shared_version(client, project_id) if client is not None else _rows_version(project_id)
    except Exception:
        # Without the cache no token can be trusted: read the database (correct, slower) until it is back.
        logger.warning("Workflow triggers of project %s read without the cache", project_id, exc_info=True)
        return _load(project_id, None)
    if copy is not None and copy.version == version:
        copy.checked_at = now
        return copy
    with _lock:
        copy = _load(project_id, version, checked_at=now)
        _copies[project_id] = copy
    return copy
