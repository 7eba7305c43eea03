import pytest

from contacts.models import Contact, Event
from contacts.tests.conftest import subscription_events

pytestmark = pytest.mark.django_db


def test_admin_lists_searches_and_shows_contacts(admin_client, make_contact, django_assert_max_num_queries):
    contact = make_contact("ada@example.com", data={"plan": "pro"})
    make_contact("bob@example.com")
    Event.objects.create(project=contact.project, contact=contact, name="signup")
    with django_assert_max_num_queries(12):
        response = admin_client.get("/admin/contacts/contact/?q=ADA")
    assert response.status_code == 200
    assert b"ada@example.com" in response.content and b"bob@example.com" not in response.content
    detail = admin_client.get(f"/admin/contacts/contact/{contact.id}/change/")
    assert detail.status_code == 200 and b"&quot;plan&quot;: &quot;pro&quot;" in detail.content
    assert admin_client.get("/admin/contacts/event/").status_code == 200
    assert admin_client.get(f"/admin/contacts/event/{Event.objects.get().id}/change/").status_code == 200


def test_admin_unsubscribe_action_records_events(admin_client, make_contact):
    a, b = make_contact("a@example.com"), make_contact("b@example.com", subscribed=False)
    response = admin_client.post(
        "/admin/contacts/contact/", {"action": "unsubscribe", "_selected_action": [str(a.id), str(b.id)]}
    )
    assert response.status_code == 302
    assert not Contact.objects.filter(subscribed=True).exists()
    assert subscription_events() == ["contact.unsubscribed"]


def test_admin_edit_subscription_goes_through_the_service(admin_client, make_contact):
    contact = make_contact("a@example.com")
    response = admin_client.post(f"/admin/contacts/contact/{contact.id}/change/", {})
    assert response.status_code == 302
    contact.refresh_from_db()
    assert contact.subscribed is False
    assert subscription_events(contact) == ["contact.unsubscribed"]
