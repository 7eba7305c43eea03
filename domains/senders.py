"""Who sends from a domain: a registry the sending apps fill, so that domains needs no import of them.

An app whose records carry a sender address (templates, campaigns) registers a finder in its `AppConfig.ready`:

    from domains.senders import register_sender_finder

    def templates_sending_from(*, project, domain_name):
        rows = Template.objects.filter(project=project).filter(
            Q(from_email__iendswith="@" + domain_name) | Q(from_email__iendswith="." + domain_name)
        )
        return [SenderUse(kind="template", id=str(row.id), name=row.name, address=row.from_email) for row in rows]

    register_sender_finder(templates_sending_from)

A finder returns every use whose from-address is at `domain_name` or at a subdomain of it; `domain_delete` then
ignores the uses another verified domain of the project still covers.
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from accounts.models import Project


@dataclass(frozen=True)
class SenderUse:
    kind: str  # "template", "campaign", ...
    id: str
    name: str
    address: str


SenderFinder = Callable[..., Iterable[SenderUse]]
_finders: list[SenderFinder] = []


def register_sender_finder(finder: SenderFinder) -> SenderFinder:
    """Register `finder(*, project, domain_name) -> Iterable[SenderUse]`; usable as a decorator; idempotent."""
    if finder not in _finders:
        _finders.append(finder)
    return finder


def unregister_sender_finder(finder: SenderFinder) -> None:
    if finder in _finders:
        _finders.remove(finder)


def sender_uses(*, project: Project, domain_name: str) -> list[SenderUse]:
    uses: list[SenderUse] = []
    for finder in _finders:
        uses.extend(finder(project=project, domain_name=domain_name))
    return uses
