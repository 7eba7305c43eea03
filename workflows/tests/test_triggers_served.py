"""A workflow enabled through one server process starts for the very next matching event, whichever process records
it: each process keeps a copy of its projects' triggers, and a copy loaded a moment before the change must not
outlive it, with Redis as the shared cache or with each process's own local-memory cache."""

import httpx
import pytest

from config.tests.processes import gunicorn_server, redis_server
from workflows.models import StepType, WorkflowExecution
from workflows.services import step_add, workflow_create

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def _track(base: str, key: str, email: str, event: str) -> None:
    answer = httpx.post(
        f"{base}/v1/track", headers={"Authorization": f"Bearer {key}"}, json={"event": event, "email": email}
    )
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("cache", ["redis", "local memory"])
def test_a_workflow_enabled_in_one_process_starts_for_the_next_event_in_another(project, cache):
    workflow = workflow_create(project=project.project, name="Welcome", event_name="signed-up")
    step_add(workflow=workflow, step_type=StepType.UPDATE_CONTACT, config={"updates": {"welcomed": True}})
    keys = project.keys
    with redis_server() as redis:
        env = {"CACHE_URL": redis.url(0) if cache == "redis" else "locmemcache://herald"}
        with gunicorn_server(**env) as first, gunicorn_server(**env) as second:
            # The second process loads its copy of the triggers while the workflow is still disabled.
            _track(second, keys.public_key, "early@example.com", "signed-up")

            enabled = httpx.patch(
                f"{first}/workflows/{workflow.id}",
                headers={"Authorization": f"Bearer {keys.secret_key}"},
                json={"enabled": True},
            )
            assert enabled.status_code == 200 and enabled.json()["enabled"] is True
            _track(second, keys.public_key, "next@example.com", "signed-up")

    started = WorkflowExecution.objects.filter(workflow=workflow).values_list("contact__email", flat=True)
    assert list(started) == ["next@example.com"]
