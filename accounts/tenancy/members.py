"""Who belongs to a project, with which role; an address that has no verified account is invited
(`accounts.identity.invitations`).

Role rules (docs/accounts.md, "Roles"): an ADMIN or the OWNER manages members; anyone may leave; the OWNER can be
neither changed nor removed, and no one is made OWNER here.
"""

from dataclasses import dataclass

from django.db import transaction

from accounts.identity.invitations import invitation_create
from accounts.models import ROLE_RANKS, Membership, Project, User
from core.errors import Conflict, Forbidden, NotFound, ValidationFailed
from core.ids import uuid_or_none

Role = Membership.Role


def role_require(*, role: str, required: str, action: str) -> None:
    """403 FORBIDDEN unless `role` is `required` or above."""
    if ROLE_RANKS[role] < ROLE_RANKS[required]:
        who = "the project's owner" if required == Role.OWNER else "a project owner or admin"
        raise Forbidden(f"Only {who} can {action}", details={"requiredRole": str(required), "role": str(role)})


@dataclass(frozen=True)
class MemberRow:
    """A member (`active`), or an address invited to become one (`invited`, no user yet)."""

    email: str
    role: str
    created_at: object
    user_id: object = None
    status: str = "active"


def member_row(membership: Membership) -> MemberRow:
    return MemberRow(
        email=membership.user.email, role=membership.role, created_at=membership.created_at, user_id=membership.user_id
    )


def members_list(*, project: Project) -> list[MemberRow]:
    memberships = Membership.objects.filter(project=project).select_related("user").order_by("created_at", "id")
    return [member_row(membership) for membership in memberships]


def _membership_of(project: Project, user_id) -> Membership:
    membership = Membership.objects.filter(project=project, user_id=uuid_or_none(user_id)).select_related("user")
    found = membership.first() if uuid_or_none(user_id) else None
    if found is None:
        raise NotFound("Member", user_id)
    return found


def _assignable(role: str) -> str:
    if role == Role.OWNER:
        raise Forbidden("No one is made owner of a project: a project has one owner, its creator")
    if role not in (Role.ADMIN, Role.MEMBER):
        raise ValidationFailed.field("role", "Expected ADMIN or MEMBER", code="invalid_enum_value", received=role)
    return role


@transaction.atomic
def member_add(*, actor: Membership, email: str, role: str) -> MemberRow:
    """Add the account of a verified address at once; invite any other address (an invitation email with a link).

    An account whose address was never verified is invited like an unknown address: anyone may sign up with any
    address and wait for it to be added to a project, so only the mailbox decides. The membership starts when the
    address is proven: with the invitation's token, a verification link or a password reset mailed to it.
    """
    role_require(role=actor.role, required=Role.ADMIN, action="add members")
    role = _assignable(role)
    email = email.strip().lower()
    project = actor.project
    user = User.objects.filter(email=email).first()
    if user is not None and Membership.objects.filter(project=project, user=user).exists():
        raise Conflict(f"{email} is already a member of this project", details={"field": "email"})
    if user is not None and user.email_verified:
        return member_row(Membership.objects.create(project=project, user=user, role=role))
    invitation = invitation_create(project=project, email=email, role=role, invited_by=actor.user)
    return MemberRow(email=email, role=role, created_at=invitation.created_at, status="invited")


def member_update(*, actor: Membership, user_id: str, role: str) -> Membership:
    role_require(role=actor.role, required=Role.ADMIN, action="change roles")
    membership = _membership_of(actor.project, user_id)
    if membership.role == Role.OWNER:
        raise Forbidden("The owner's role cannot be changed")
    membership.role = _assignable(role)
    membership.save(update_fields=["role"])
    return membership


def member_remove(*, actor: Membership, user_id: str) -> None:
    """Remove a member; any member may remove themselves (leave), except the owner."""
    membership = _membership_of(actor.project, user_id)
    if membership.role == Role.OWNER:
        raise Forbidden("The owner cannot be removed from the project")
    if membership.pk != actor.pk:
        role_require(role=actor.role, required=Role.ADMIN, action="remove members")
    membership.delete()
