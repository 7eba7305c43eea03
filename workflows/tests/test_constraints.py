"""The rules a later engine relies on hold in the database itself, whatever code writes the rows."""

import pytest
from django.db import IntegrityError, transaction

from contacts.models import Contact
from workflows.models import (
    ExecutionStatus,
    StepType,
    Workflow,
    WorkflowExecution,
    WorkflowStep,
    WorkflowStepExecution,
    WorkflowTransition,
)


@pytest.fixture
def graph(project):
    workflow = Workflow.objects.create(project=project.project, name="Welcome", event_name="signup")
    trigger = WorkflowStep.objects.create(workflow=workflow, type=StepType.TRIGGER, name="Trigger: signup")
    step = WorkflowStep.objects.create(workflow=workflow, type=StepType.EXIT, name="Done")
    contact = Contact.objects.create(project=project.project, email="ann@example.com")
    return workflow, trigger, step, contact


def refused(make) -> bool:
    try:
        with transaction.atomic():
            make()
    except IntegrityError:
        return True
    return False


def test_one_trigger_per_workflow(graph):
    workflow, *_ = graph
    assert refused(lambda: WorkflowStep.objects.create(workflow=workflow, type=StepType.TRIGGER))


@pytest.mark.parametrize(
    "first, second",
    [
        ({}, {}),  # a plain step leaves by one transition
        ({"branch": "yes"}, {"branch": "yes"}),
        ({"wait_outcome": "EVENT"}, {"wait_outcome": "EVENT"}),
    ],
)
def test_one_transition_per_exit(graph, first, second):
    workflow, trigger, step, _ = graph
    other = WorkflowStep.objects.create(workflow=workflow, type=StepType.EXIT)
    WorkflowTransition.objects.create(workflow=workflow, from_step=trigger, to_step=step, **first)
    assert refused(
        lambda: WorkflowTransition.objects.create(workflow=workflow, from_step=trigger, to_step=other, **second)
    )


def test_no_self_link_and_not_both_labels(graph):
    workflow, trigger, step, _ = graph
    assert refused(lambda: WorkflowTransition.objects.create(workflow=workflow, from_step=step, to_step=step))
    assert refused(
        lambda: WorkflowTransition.objects.create(
            workflow=workflow, from_step=trigger, to_step=step, branch="yes", wait_outcome="EVENT"
        )
    )


def execution(workflow, contact, **fields):
    return WorkflowExecution.objects.create(project=workflow.project, workflow=workflow, contact=contact, **fields)


def test_a_contact_enters_once_without_reentry(graph):
    workflow, _, _, contact = graph
    execution(workflow, contact, status=ExecutionStatus.COMPLETED)
    assert refused(lambda: execution(workflow, contact))


def test_one_active_execution_per_contact_with_reentry(graph):
    workflow, _, _, contact = graph
    execution(workflow, contact, entry=1, status=ExecutionStatus.WAITING)
    assert refused(lambda: execution(workflow, contact, entry=2))
    WorkflowExecution.objects.update(status=ExecutionStatus.COMPLETED)
    execution(workflow, contact, entry=2)


def test_one_event_never_starts_two_executions(graph, project):
    workflow, _, _, contact = graph
    other = Contact.objects.create(project=project.project, email="bob@example.com")
    event_id = "0190a000-0000-7000-8000-000000000001"
    execution(workflow, contact, trigger_event_id=event_id, status=ExecutionStatus.COMPLETED)
    assert refused(lambda: execution(workflow, other, trigger_event_id=event_id))


def test_a_step_runs_once_per_execution(graph):
    workflow, trigger, _, contact = graph
    run = execution(workflow, contact)
    WorkflowStepExecution.objects.create(execution=run, step=trigger)
    assert refused(lambda: WorkflowStepExecution.objects.create(execution=run, step=trigger))
