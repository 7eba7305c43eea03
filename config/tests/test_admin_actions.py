"""Admin actions need the permission of what they do, not the permission to look.

Django offers a `ModelAdmin`'s actions to anyone who may see its change list unless an action declares
`allowed_permissions`; so a staff user with only view permissions could regenerate a project's keys and read the new
secret. The walk below covers every action of every registered admin, those added later included: a staff user with
every view permission and nothing else is offered none of them, and posting one does nothing."""

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.contrib.messages import get_messages
from django.forms.models import model_to_dict
from django.test import Client

from accounts.identity.users import user_get_or_create
from accounts.models import Project
from accounts.tenancy.keys import hash_key
from accounts.tenancy.services import project_disable
from conftest import PASSWORD
from domains.models import Domain
from domains.services import domain_create
from messaging.feedback.suppression import suppression_add
from messaging.models import Suppression

pytestmark = pytest.mark.django_db

REGISTERED = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label_lower)
# Every action of every admin before permissions are applied (the site's `delete_selected` included).
ACTIONS = [
    (model, model_admin, name) for model, model_admin in REGISTERED for _, name, _ in model_admin._get_base_actions()
]


def _staff_client(*codenames_of: str) -> Client:
    """A logged-in staff user (not a superuser) holding exactly the permissions whose codenames start with one of
    `codenames_of` ("view_" for every view permission)."""
    user, _ = user_get_or_create(email="viewer@example.test", password=PASSWORD)
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    for prefix in codenames_of:
        user.user_permissions.add(*Permission.objects.filter(codename__startswith=prefix))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def viewer(project) -> Client:
    return _staff_client("view_")


def _changelist(model) -> str:
    return f"/admin/{model._meta.app_label}/{model._meta.model_name}/"


def test_every_herald_action_declares_its_permission():
    # Django's own `delete_selected` checks the delete permission itself; every other action must say what it needs.
    undeclared = [
        f"{model._meta.label_lower}.{name}"
        for model, model_admin, name in ACTIONS
        if name != "delete_selected" and not getattr(model_admin.get_action(name)[0], "allowed_permissions", None)
    ]
    assert undeclared == []


@pytest.mark.parametrize(
    "model, model_admin, name", ACTIONS, ids=[f"{model._meta.label_lower}.{name}" for model, _, name in ACTIONS]
)
def test_a_view_only_staff_user_can_run_no_action(viewer, project, model, model_admin, name):
    url = _changelist(model)
    listed = viewer.get(url)
    assert listed.status_code == 200  # the user does see the list: the refusal below is about the action
    action_form = listed.context["action_form"]
    offered = [choice for choice, _ in action_form.fields["action"].choices] if action_form else []
    assert name not in offered

    row = model._default_manager.order_by("pk").first()
    before = model_to_dict(row) if row else None
    selected = [row.pk] if row else ["1"]
    response = viewer.post(url, {"action": name, "_selected_action": selected, "index": 0}, follow=True)
    assert response.status_code == 200
    shown = [str(message) for message in get_messages(response.wsgi_request)]
    assert all(message == "No action selected." for message in shown), shown
    if row is not None:
        assert model_to_dict(model._default_manager.get(pk=row.pk)) == before


def test_regenerating_keys_is_refused_to_a_viewer_and_allowed_with_change(project, secret_client):
    url = "/admin/accounts/project/"
    payload = {"action": "regenerate_keys", "_selected_action": [project.id], "index": 0}
    response = _staff_client("view_").post(url, payload, follow=True)
    shown = " ".join(str(message) for message in get_messages(response.wsgi_request))
    assert "sk_" not in shown
    assert Project.objects.get(pk=project.id).secret_key_hash == hash_key(project.keys.secret_key)
    assert secret_client.get("/contacts").status_code == 200

    response = _staff_client("view_", "change_project").post(url, payload, follow=True)
    shown = " ".join(str(message) for message in get_messages(response.wsgi_request))
    assert "sk_" in shown
    assert secret_client.get("/contacts").status_code == 401


def test_a_viewer_can_neither_vouch_for_a_domain_nor_lift_a_suppression_nor_re_enable_a_project(project, other_project):
    pending = domain_create(project=project.project, name="pending.example.test")
    suppression = suppression_add(project=project.project, email="gone@example.test", reason="BOUNCE")
    project_disable(project=other_project.project, reason="BOUNCE_RATE")
    viewer = _staff_client("view_")
    for url, action, pk in [
        ("/admin/domains/domain/", "mark_verified", pending.pk),
        ("/admin/messaging/suppression/", "remove", suppression.pk),
        ("/admin/messaging/projectreputation/", "enable", other_project.id),
    ]:
        viewer.post(url, {"action": action, "_selected_action": [pk], "index": 0})

    assert Domain.objects.get(pk=pending.pk).status == Domain.Status.PENDING
    assert Suppression.objects.filter(pk=suppression.pk).exists()
    assert Project.objects.get(pk=other_project.id).disabled
