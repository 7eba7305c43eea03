"""A contact with some history, written as the apps write it, for the tests of its page in the console: tracked
events, an email sent, opened and clicked, a workflow execution waiting at a step, an unsubscription, segment
memberships; and the same address in another project, with history of its own."""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.utils import timezone

from contacts.models import Contact, Event
from messaging.models import Email
from segments.models import Segment, SegmentMembership, SegmentType
from workflows.models import ExecutionStatus, StepType, Workflow, WorkflowExecution, WorkflowStep

ADDRESS = "ann@example.test"
MESSAGE_ID = "<welcome-ann@alice.test>"


@dataclass
class History:
    contact: Contact
    email: Email
    execution: WorkflowExecution
    unsubscribed_at: datetime
    # What the timeline shows, newest first: (what, a part of the details).
    expected: list[tuple[str, str]]


def event(contact: Contact, name: str, at: datetime, data: dict | None = None, email: Email | None = None) -> Event:
    return Event.objects.create(
        project=contact.project, contact=contact, name=name, data=data or {}, email_id=email and email.id, created_at=at
    )


def email(contact: Contact, subject: str, at: datetime, **fields) -> Email:
    return Email.objects.create(
        project=contact.project,
        contact=contact,
        to_email=contact.email,
        from_email="news@alice.test",
        subject=subject,
        created_at=at,
        **fields,
    )


def contact_with_history(project, now: datetime | None = None) -> History:
    """Ann, of `project`, ten days into her history."""
    start = (now or timezone.now()) - timedelta(days=10)
    at = [start + timedelta(hours=hour) for hour in range(12)]
    contact = Contact.objects.create(
        project=project,
        email=ADDRESS,
        subscribed=False,
        data={"plan": "pro", "name": "Ann", "tags": ["early", "vip"], "visits": 3},
        created_at=start - timedelta(minutes=5),
    )
    event(contact, "signup", at[0], {"plan": "pro", "referrer": "newsletter"})
    welcome = email(contact, "Welcome, Ann", at[1], status=Email.Status.CLICKED, opens=2, clicks=1)
    # The data of email events as delivery and tracking write it: the email's ids and subject, and the kind's own.
    about = {"emailId": str(welcome.id), "messageId": MESSAGE_ID, "subject": welcome.subject, "source": "api"}
    event(contact, "email.sent", at[1] + timedelta(minutes=1), {**about, "from": "news@alice.test"}, welcome)
    event(contact, "email.open", at[2], {**about, "opens": 1, "isFirstOpen": True}, welcome)
    event(contact, "email.click", at[3], {**about, "link": "https://shop.example/sale", "clicks": 1}, welcome)

    workflow = Workflow.objects.create(project=project, name="Onboarding", event_name="signup")
    WorkflowStep.objects.create(workflow=workflow, type=StepType.TRIGGER, name="Trigger: signup")
    wait = WorkflowStep.objects.create(workflow=workflow, type=StepType.DELAY, name="Wait a day")
    execution = WorkflowExecution.objects.create(
        project=project,
        workflow=workflow,
        contact=contact,
        status=ExecutionStatus.WAITING,
        current_step=wait,
        started_at=at[4],
        created_at=at[4],
    )
    event(contact, "contact.unsubscribed", at[5], {"source": "link"}, welcome)

    vip = Segment.objects.create(project=project, name="VIP", type=SegmentType.STATIC)
    active = Segment.objects.create(
        project=project, name="Active", condition={"field": "plan", "operator": "equals", "value": "pro"},
        track_membership=True,
    )  # fmt: skip
    gone = Segment.objects.create(project=project, name="Trial", type=SegmentType.STATIC)
    SegmentMembership.objects.create(segment=vip, contact=contact, entered_at=at[0])
    SegmentMembership.objects.create(segment=active, contact=contact, entered_at=at[6])
    SegmentMembership.objects.create(segment=gone, contact=contact, entered_at=at[0], exited_at=at[6])
    event(contact, "segment.active.entry", at[6], {"segmentId": str(active.id), "segmentName": "Active"})

    # Another contact of the project, and Ann's address in another project: none of theirs is Ann's.
    bob = Contact.objects.create(project=project, email="bob@example.test")
    event(bob, "bob-only", at[7])
    email(bob, "Bob's receipt", at[7])
    return History(
        contact=contact,
        email=welcome,
        execution=execution,
        unsubscribed_at=at[5],
        expected=[
            ("Entered segment", "Active"),
            ("Unsubscribed", 'source: "link"'),
            ("Workflow started", "Onboarding: WAITING, at step Wait a day (DELAY)"),
            ("Email clicked", 'subject: "Welcome, Ann", link: "https://shop.example/sale"'),
            ("Email opened", "Welcome, Ann"),
            ("Email sent", 'subject: "Welcome, Ann", from: "news@alice.test"'),
            ("Email (api)", "Welcome, Ann: CLICKED, 2 open(s), 1 click(s)"),
            ("Event signup", 'plan: "pro", referrer: "newsletter"'),
        ],
    )


def same_address_elsewhere(project, now: datetime | None = None) -> Contact:
    at = (now or timezone.now()) - timedelta(days=9)
    contact = Contact.objects.create(project=project, email=ADDRESS, data={"secret": "other project's"})
    event(contact, "other-project-event", at)
    email(contact, "Other project's subject", at)
    return contact
