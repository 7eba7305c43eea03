"""What the engine hands a step to run and what the step hands back: the engine (`workflows.engine`) claims and
records, the step types (`workflows.steps`) run, and both speak in these two records."""

from dataclasses import dataclass
from datetime import datetime

from workflows.models import WorkflowExecution, WorkflowStep, WorkflowStepExecution


@dataclass(frozen=True)
class Outcome:
    """What a step came to. `follow` is the transition's label to take: "" for a plain one, a CONDITION's branch,
    a WAIT_FOR_EVENT's outcome. A `pause` status (SCHEDULED or WAITING) stops the execution until `until` (None:
    until an event comes); `exit_reason` ends it EXITED, `error` FAILED; otherwise it goes on."""

    output: dict | None = None
    follow: str = ""
    context: dict | None = None
    pause: str | None = None
    until: datetime | None = None
    exit_reason: str | None = None
    error: str | None = None


@dataclass
class Claim:
    """A step execution this worker holds. `resume` says why it runs: None (first run), "due" (its DELAY, timeout
    or retry time came, or the worker that held it died), "event" (a WAIT_FOR_EVENT's event arrived; the output
    holds it)."""

    execution: WorkflowExecution
    step: WorkflowStep
    step_execution: WorkflowStepExecution
    resume: str | None
    now: datetime
