import pytest
from django.contrib.messages import get_messages

from accounts.models import Project
from accounts.tenancy.keys import hash_key
from conftest import client_with

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "/admin/accounts/user/",
        "/admin/accounts/project/",
        "/admin/accounts/membership/",
        "/admin/accounts/invitation/",
        "/admin/accounts/user/?q=alice&is_staff__exact=0",
        "/admin/accounts/user/?o=3",
        "/admin/accounts/idempotencyrecord/",
        "/admin/accounts/job/",
        "/admin/domains/domain/",
    ],
)
def test_admin_lists_open(admin_client, project, url):
    assert admin_client.get(url).status_code == 200


def test_disable_enable_and_regenerate_actions(admin_client, project, secret_client):
    url = "/admin/accounts/project/"
    assert secret_client.get("/contacts").status_code == 200  # the key is known (and remembered) before the action
    admin_client.post(url, {"action": "disable_projects", "_selected_action": [project.id]})
    response = secret_client.get("/contacts")
    assert response.status_code == 403 and response.json()["error"]["code"] == "PROJECT_DISABLED"
    assert Project.objects.get(pk=project.id).disabled_reason == "OPERATOR"

    admin_client.post(url, {"action": "enable_projects", "_selected_action": [project.id]})
    assert secret_client.get("/contacts").status_code == 200

    response = admin_client.post(url, {"action": "regenerate_keys", "_selected_action": [project.id]}, follow=True)
    shown = " ".join(str(message) for message in get_messages(response.wsgi_request))
    stored = Project.objects.get(pk=project.id)
    assert stored.public_key in shown
    secret = next(word for word in shown.split() if word.startswith("sk_"))
    assert stored.secret_key_hash == hash_key(secret)
    assert secret_client.get("/contacts").json()["error"]["code"] == "UNAUTHORIZED"
    assert client_with(secret).get("/contacts").status_code == 200


def test_admin_actions_mail_reset_and_invitation_links(
    admin_client, project, smtp_sink, django_capture_on_commit_callbacks
):
    from accounts.models import Invitation, Membership, User
    from accounts.tenancy.members import member_add

    owner = Membership.objects.get(project=project.project)
    with django_capture_on_commit_callbacks(execute=True):
        member_add(actor=owner, email="invitee@example.test", role="MEMBER")
    alice = User.objects.get(email="alice@example.test")
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post("/admin/accounts/user/", {"action": "send_password_reset", "_selected_action": [alice.pk]})
        admin_client.post(
            "/admin/accounts/invitation/", {"action": "resend", "_selected_action": [Invitation.objects.get().pk]}
        )
    assert [m.rcpt_tos for m in smtp_sink.received] == [
        ["invitee@example.test"],
        ["alice@example.test"],
        ["invitee@example.test"],
    ]
