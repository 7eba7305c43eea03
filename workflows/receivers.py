"""The workflows app's receiver of the contacts app's event hook (registered in `WorkflowsConfig.ready`)."""

from workflows.starts import events_concern_workflows


def on_events_recorded(sender, project, events, **kwargs) -> None:
    """Receiver of `contacts.signals.events_recorded`, after the events' commit: start the workflows they trigger and
    resume the executions waiting for them. A failure is logged by the signal and reaches neither the request nor
    the other receivers; the events stay recorded."""
    events_concern_workflows(project=project, events=events)
