"""What the apps above accounts plug into a project's account endpoints, so that accounts never imports them.

- Setup facts (`register_setup_fact`): one figure of `GET /projects/:id/setup-state` each (`hasVerifiedDomain` from
  domains, `contactCount` from contacts, ...). A fact no app registered is reported with its default.
- Reset steps (`register_project_reset`): what `POST /users/@me/projects/:id/reset` deletes, each app its own data.
  Steps run from the lowest `order` up, so the apps above delete their rows before the rows they point to
  (workflows and campaigns at 10, segments and messaging at 20, contacts at 30); keys, members and domains stay.

- Default sender domains (`register_default_sender_domains`): the domain a project's list entry names as its
  `defaultSenderDomain` (domains answers: the first domain it verified), for many projects in one query.

Each app registers in its `AppConfig.ready` (docs/accounts.md, "Setup state and reset").
"""

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from accounts.models import Project

# The facts of the setup state, in their order, with what is reported until an app answers for one.
SETUP_FACTS: dict[str, Any] = {
    "hasVerifiedDomain": False,
    "contactCount": 0,
    "hasTemplate": False,
    "lastCampaignSentAt": None,
    "hasEnabledWorkflow": False,
    "hasSubscription": False,
}
_facts: dict[str, Callable[[Project], Any]] = {}


@dataclass(frozen=True)
class ResetStep:
    name: str
    order: int
    # delete(project) -> rows deleted; each call is one transaction of its own.
    delete: Callable[[Project], int]


_reset_steps: dict[str, ResetStep] = {}


def register_setup_fact(name: str, fact: Callable[[Project], Any]) -> None:
    if name not in SETUP_FACTS:
        raise ValueError(f"Unknown setup fact {name!r}; known: {', '.join(SETUP_FACTS)}")
    _facts[name] = fact


def setup_facts(project: Project) -> dict[str, Any]:
    return {name: _facts[name](project) if name in _facts else default for name, default in SETUP_FACTS.items()}


def register_project_reset(name: str, delete: Callable[[Project], int], *, order: int) -> None:
    _reset_steps[name] = ResetStep(name=name, order=order, delete=delete)


def reset_steps() -> list[ResetStep]:
    return sorted(_reset_steps.values(), key=lambda step: (step.order, step.name))


_sender_domains: list[Callable[[Iterable[uuid.UUID]], dict[uuid.UUID, str]]] = []


def register_default_sender_domains(finder: Callable[[Iterable[uuid.UUID]], dict[uuid.UUID, str]]) -> None:
    _sender_domains[:] = [finder]


def default_sender_domains(project_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, str]:
    return _sender_domains[0](project_ids) if _sender_domains else {}
