"""What the apps above accounts plug into a project's account endpoints, so that accounts never imports them.

Each app registers in its `AppConfig.ready` (docs/accounts.md, "Setup state and reset").
"""

import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from accounts.models import Project
from core.hooks import Hook

# The facts of the setup state, in their order, with what is reported until an app answers for one.
SETUP_FACTS: dict[str, Any] = {
    "hasVerifiedDomain": False,
    "contactCount": 0,
    "hasTemplate": False,
    "lastCampaignSentAt": None,
    "hasEnabledWorkflow": False,
    "hasSubscription": False,
}
setup_facts: Hook[Callable[[Project], Any]] = Hook(
    "accounts.tenancy.registry.setup_facts",
    """`fact(project)`, registered under one of SETUP_FACTS: that figure of `GET /projects/:id/setup-state`
    (`hasVerifiedDomain` from domains, `contactCount` from contacts, ...). A fact no app registered is reported with
    its default.""",
    keys=SETUP_FACTS,
)


@dataclass(frozen=True)
class ResetStep:
    name: str
    order: int
    # delete(project) -> rows deleted; each call is one transaction of its own.
    delete: Callable[[Project], int]


project_resets: Hook[ResetStep] = Hook(
    "accounts.tenancy.registry.project_resets",
    """A `ResetStep`: what `POST /users/@me/projects/:id/reset` deletes, each app its own data. Steps run from the
    lowest `order` up, so the apps above delete their rows before the rows they point to (workflows and campaigns at
    10, segments and messaging at 20, contacts at 30); keys, members and domains stay.""",
)

default_sender_domain_finders: Hook[Callable[[Collection[uuid.UUID]], dict[uuid.UUID, str]]] = Hook(
    "accounts.tenancy.registry.default_sender_domain_finders",
    """`finder(project_ids) -> {project id: domain name}`: the domain a project's list entry names as its
    `defaultSenderDomain` (domains answers: the first domain it verified), for many projects in one query.""",
)


def project_setup_facts(project: Project) -> dict[str, Any]:
    facts = setup_facts.implementations
    return {name: facts[name](project) if name in facts else default for name, default in SETUP_FACTS.items()}


def reset_steps() -> list[ResetStep]:
    return sorted(project_resets, key=lambda step: (step.order, step.name))


def default_sender_domains(project_ids: Collection[uuid.UUID]) -> dict[uuid.UUID, str]:
    found: dict[uuid.UUID, str] = {}
    for finder in default_sender_domain_finders:
        found.update(finder(project_ids))
    return found
