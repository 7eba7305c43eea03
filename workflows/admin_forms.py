"""The console's forms for editing a workflow's graph. Each one only parses what the operator typed and hands it to
the service the API calls (`workflows.services`); what the service refuses comes back at the form's field, under
the same message the API gives."""

from collections.abc import Callable

from django import forms

from core.errors import ServiceError, ValidationFailed
from workflows import services
from workflows.models import Branch, StepType, WaitOutcome, Workflow, WorkflowStep, WorkflowTransition

CONFIG_HELP = {
    StepType.SEND_EMAIL: '{"templateId": "TEMPLATE-ID", "recipient": {"type": "CONTACT"}}',
    StepType.DELAY: '{"amount": 2, "unit": "days"}',
    StepType.WAIT_FOR_EVENT: '{"eventName": "purchase", "timeout": 86400}',
    StepType.CONDITION: '{"field": "data.plan", "operator": "equals", "value": "pro"}',
    StepType.WEBHOOK: '{"url": "https://example.com/hook", "method": "POST"}',
    StepType.UPDATE_CONTACT: '{"updates": {"plan": "pro"}, "subscriptionAction": "none"}',
    StepType.EXIT: '{"reason": "Converted"}',
}


def _config_help(step_type: str | None = None) -> str:
    # Shown as HTML by Django: the examples hold no markup.
    types = [step_type] if step_type else list(CONFIG_HELP)
    return "A JSON object, as the API takes it. " + "; ".join(f"{kind}: {CONFIG_HELP[kind]}" for kind in types)


class ServiceForm(forms.Form):
    """A form whose `submit` calls one service. `api_fields` maps the API's field names, as the service's errors
    name them, to this form's fields; an error below `config` is shown at the config field with its key."""

    api_fields: dict[str, str] = {}

    def submit(self, call: Callable) -> bool:
        """Whether `call()` went through; if not, the service's refusal is added to the form."""
        try:
            call()
            return True
        except ValidationFailed as refused:
            for error in refused.errors or [{"field": None, "message": refused.message}]:
                self._refused_at(error.get("field") or "", error["message"])
        except ServiceError as refused:
            self.add_error(None, refused.message)
        return False

    def _refused_at(self, path: str, message: str) -> None:
        if path in self.api_fields:
            self.add_error(self.api_fields[path], message)
        elif path.startswith("config.") and "config" in self.fields:
            self.add_error("config", f"{path.removeprefix('config.')}: {message}")
        else:
            self.add_error(None, f"{path}: {message}" if path else message)


class StepAddForm(ServiceForm):
    api_fields = {"type": "step_type", "name": "name", "config": "config"}

    step_type = forms.ChoiceField(
        label="Type", choices=[(kind, kind) for kind in StepType.values if kind != StepType.TRIGGER]
    )
    name = forms.CharField(max_length=255, required=False, help_text="Left empty, the type's name is used.")
    config = forms.JSONField(
        required=False, initial=dict, widget=forms.Textarea(attrs={"rows": 6}), help_text=_config_help()
    )
    auto_connect = forms.BooleanField(
        required=False,
        initial=True,
        label="Connect it",
        help_text="After the last step that leads nowhere (not after an EXIT or a CONDITION, whose branch you choose).",
    )

    def __init__(self, *args, workflow: Workflow, **kwargs):
        super().__init__(*args, **kwargs)
        self.workflow = workflow

    def save(self) -> bool:
        data = self.cleaned_data
        return self.submit(
            lambda: services.step_add(
                workflow=self.workflow,
                step_type=data["step_type"],
                config=data["config"],
                name=data["name"],
                auto_connect=data["auto_connect"],
            )
        )


class StepChangeForm(ServiceForm):
    api_fields = {"name": "name", "config": "config"}

    name = forms.CharField(max_length=255, required=False, help_text="Left empty, the type's name is used.")
    config = forms.JSONField(required=False, widget=forms.Textarea(attrs={"rows": 6}))

    def __init__(self, *args, step: WorkflowStep, **kwargs):
        super().__init__(*args, initial={"name": step.name, "config": step.config}, **kwargs)
        self.step = step
        if step.type == StepType.TRIGGER:
            del self.fields["config"]  # the trigger's event is the workflow's
        else:
            self.fields["config"].help_text = _config_help(step.type)

    def save(self) -> bool:
        data = self.cleaned_data
        # As a PATCH does: the config is checked again only when it changed.
        config = data["config"] if "config" in self.changed_data else services.UNSET
        return self.submit(lambda: services.step_update(step=self.step, name=data["name"], config=config))


class StepDeleteForm(ServiceForm):
    api_fields = {"splice": "splice"}

    splice = forms.BooleanField(
        required=False,
        label="Splice",
        help_text="Delete only this step and lead what came into it to its successor. Without it, the steps that "
        "can be reached only through this one are deleted too.",
    )

    def __init__(self, *args, step: WorkflowStep, **kwargs):
        super().__init__(*args, **kwargs)
        self.step = step

    def save(self) -> bool:
        return self.submit(lambda: services.step_delete(step=self.step, splice=self.cleaned_data["splice"]))


class StepChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, step: WorkflowStep) -> str:
        return f"{step.name or step.type} ({step.type})"


class TransitionAddForm(ServiceForm):
    api_fields = {"fromStepId": "from_step", "toStepId": "to_step", "branch": "branch", "waitOutcome": "wait_outcome"}

    from_step = StepChoiceField(queryset=WorkflowStep.objects.none(), label="From")
    to_step = StepChoiceField(queryset=WorkflowStep.objects.none(), label="To")
    branch = forms.ChoiceField(
        choices=[("", "none"), *Branch.choices], required=False, help_text="Out of a CONDITION step: which branch."
    )
    wait_outcome = forms.ChoiceField(
        choices=[("", "none"), *WaitOutcome.choices],
        required=False,
        label="Wait outcome",
        help_text="Out of a WAIT_FOR_EVENT step: when the event came (the default) or when the wait timed out.",
    )

    def __init__(self, *args, workflow: Workflow, **kwargs):
        super().__init__(*args, **kwargs)
        # Only this workflow's steps can be chosen: a step of another workflow is not a valid choice.
        steps = workflow.steps.order_by("created_at", "id")
        self.fields["from_step"].queryset = steps
        self.fields["to_step"].queryset = steps.exclude(type=StepType.TRIGGER)
        self.workflow = workflow

    def save(self) -> bool:
        data = self.cleaned_data
        return self.submit(
            lambda: services.transition_add(
                workflow=self.workflow,
                from_step_id=data["from_step"].id,
                to_step_id=data["to_step"].id,
                branch=data["branch"] or None,
                wait_outcome=data["wait_outcome"] or None,
            )
        )


class TransitionDeleteForm(ServiceForm):
    def __init__(self, *args, transition: WorkflowTransition, **kwargs):
        super().__init__(*args, **kwargs)
        self.transition = transition

    def save(self) -> bool:
        return self.submit(lambda: services.transition_delete(transition=self.transition))
