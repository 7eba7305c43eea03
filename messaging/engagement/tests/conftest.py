from contacts.models import Contact
from messaging.models import Email


def sent_email(project) -> Email:
    """A SENT email to a new contact (ann@example.test), as opens and clicks find it."""
    contact = Contact.objects.create(project=project.project, email="ann@example.test")
    return Email.objects.create(
        project=project.project,
        contact=contact,
        to_email=contact.email,
        from_email="a@alice.test",
        subject="S",
        status=Email.Status.SENT,
    )
