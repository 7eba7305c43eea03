"""The console's forms for editing a workflow's graph. Each one only parses what the operator typed and hands it to
the service the API calls (`workflows.services`); what the service refuses comes back at the form's field, under
the same message the API gives."""

from collections.abc import Callable

from django import forms

from core.errors import ServiceError, ValidationFailed
from workflows import services
from workflows.admin_steps import STEP_FIELDS, StepFields
from workflows.models import Branch, StepType, WaitOutcome, Workflow, WorkflowStep, WorkflowTransition


class ServiceForm(forms.Form):
    """A form whose `submit` calls one service. `api_fields` maps the API's field names, as the service's errors
    name them, to this form's fields."""

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
        else:
            self.add_error(None, f"{path}: {message}" if path else message)

    @property
    def field_groups(self) -> list[dict]:
        """The fields as the page shows them, a fieldset each group: here one, without a heading."""
        return [{"fields": list(self)}]


def _unchecked(field: forms.Field) -> forms.Field:
    """`field` shown as it is and taken as it was typed, never refused: a field of a step type not chosen."""
    return forms.CharField(
        required=False, strip=False, label=field.label, help_text=field.help_text, widget=field.widget
    )


class StepConfigForm(ServiceForm):
    """A step form with the typed fields of a step type (`workflows.admin_steps`) in place of the JSON config: the
    chosen type's fields make the one config the service takes, and a refusal at `config.<key>` is shown at the
    field it names. Another type's fields, shown on the add form without JavaScript, are kept as typed and ignored."""

    def _add_typed_fields(self, kinds: list[StepFields], *, project, chosen: str | None, initial: dict) -> None:
        self.chosen = STEP_FIELDS.get(chosen or "")
        self.typed: dict[str, list[str]] = {}  # step type -> its fields' names
        for kind in kinds:
            fields = kind.fields(project)
            self.typed[kind.step_type] = list(fields)
            for name, field in fields.items():
                ignored = self.is_bound and kind is not self.chosen
                self.fields[name] = _unchecked(field) if ignored else field
                if name in initial:
                    self.initial[name] = initial[name]

    def config(self) -> dict:
        if self.chosen is None:
            return {}
        return self.chosen.config({name: self.cleaned_data[name] for name in self.typed[self.chosen.step_type]})

    def _refused_at(self, path: str, message: str) -> None:
        found = (
            self.chosen.field_at(path.removeprefix("config.")) if self.chosen and path.startswith("config.") else None
        )
        if found:
            name, below = found
            self.add_error(name, f"{below}: {message}" if below else message)
        elif path == "config":  # about the config as a whole: the step would change nothing
            self.add_error(None, message)
        else:
            super()._refused_at(path, message)

    @property
    def field_groups(self) -> list[dict]:
        typed = {name for names in self.typed.values() for name in names}
        common = [field for field in self if field.name not in typed]
        groups = [{"fields": [field for field in common if field.name != "auto_connect"]}]
        for step_type, names in self.typed.items():
            legend = f"{STEP_FIELDS[step_type].legend} ({step_type})"
            groups.append({"step_type": step_type, "legend": legend, "fields": [self[name] for name in names]})
        return [*groups, {"fields": [field for field in common if field.name == "auto_connect"]}]


class StepAddForm(StepConfigForm):
    api_fields = {"type": "step_type", "name": "name"}

    step_type = forms.ChoiceField(
        label="Type",
        choices=[(kind, kind) for kind in StepType.values if kind != StepType.TRIGGER],
        help_text="Then fill in that type's fields below; the other types' fields are ignored.",
    )
    name = forms.CharField(max_length=255, required=False, help_text="Left empty, the type's name is used.")
    auto_connect = forms.BooleanField(
        required=False,
        initial=True,
        label="Connect it",
        help_text="After the last step that leads nowhere (not after an EXIT or a CONDITION, whose branch you choose).",
    )

    class Media:
        js = ["workflows/step-fields.js"]

    def __init__(self, *args, workflow: Workflow, **kwargs):
        super().__init__(*args, **kwargs)
        self.workflow = workflow
        chosen = self.data.get("step_type") if self.is_bound else None
        self._add_typed_fields(list(STEP_FIELDS.values()), project=workflow.project, chosen=chosen, initial={})

    def save(self) -> bool:
        data = self.cleaned_data
        return self.submit(
            lambda: services.step_add(
                workflow=self.workflow,
                step_type=data["step_type"],
                config=self.config(),
                name=data["name"],
                auto_connect=data["auto_connect"],
            )
        )


class StepChangeForm(StepConfigForm):
    api_fields = {"name": "name"}

    name = forms.CharField(max_length=255, required=False, help_text="Left empty, the type's name is used.")

    def __init__(self, *args, step: WorkflowStep, **kwargs):
        super().__init__(*args, initial={"name": step.name}, **kwargs)
        self.step = step
        # The trigger's event is the workflow's: a TRIGGER step has no typed fields.
        kind = STEP_FIELDS.get(step.type)
        kinds = [kind] if kind else []
        initial = kind.initial(step.config) if kind else {}
        self._add_typed_fields(kinds, project=step.workflow.project, chosen=step.type, initial=initial)

    def save(self) -> bool:
        # As a PATCH does: the config is checked again only when it changed.
        config = self.config()
        changed = config if self.chosen and config != self.step.config else services.UNSET
        return self.submit(lambda: services.step_update(step=self.step, name=self.cleaned_data["name"], config=changed))


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
