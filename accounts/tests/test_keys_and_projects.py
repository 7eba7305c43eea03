import json
import re

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Membership, Project, User
from accounts.tenancy.keys import hash_key
from accounts.tenancy.services import project_regenerate_keys
from domains.models import Domain

pytestmark = pytest.mark.django_db
KEY = re.compile(r"^(pk|sk)_[0-9a-f]{64}$")


def test_keys_have_the_documented_shape_and_the_secret_is_stored_only_as_a_hash(project):
    assert KEY.match(project.keys.public_key) and project.keys.public_key.startswith("pk_")
    assert KEY.match(project.keys.secret_key) and project.keys.secret_key.startswith("sk_")
    stored = Project.objects.filter(pk=project.id).values().get()
    assert project.keys.secret_key not in json.dumps(stored, default=str)
    assert stored["secret_key_hash"] == hash_key(project.keys.secret_key)
    assert stored["secret_key_hint"] == project.keys.secret_key[-4:]


def test_regeneration_replaces_both_keys(project):
    new = project_regenerate_keys(project=project.project)
    assert new.public_key != project.keys.public_key
    assert new.secret_key != project.keys.secret_key
    stored = Project.objects.get(pk=project.id)
    assert stored.public_key == new.public_key
    assert stored.secret_key_hash == hash_key(new.secret_key)


def test_create_project_json_prints_exactly_one_object_and_creates_everything(capsys):
    call_command(
        "create_project",
        "--name",
        "Acme",
        "--owner-email",
        "Owner@Acme.test",
        "--password",
        "s3cret-pass",
        "--verified-domain",
        "Acme.test",
        "--json",
    )
    out = capsys.readouterr().out.strip()
    payload = json.loads(out)
    assert set(payload) == {"id", "name", "publicKey", "secretKey"}
    project = Project.objects.get(pk=payload["id"])
    assert project.name == "Acme"
    assert project.secret_key_hash == hash_key(payload["secretKey"])
    owner = User.objects.get(email="owner@acme.test")
    assert owner.check_password("s3cret-pass")
    assert Membership.objects.get(project=project, user=owner).role == "OWNER"
    domain = Domain.objects.get(project=project)
    assert (domain.name, domain.status, domain.verification_method) == ("acme.test", "verified", "operator")


def test_create_project_reuses_an_existing_owner_and_refuses_a_taken_domain(capsys, project):
    with pytest.raises(CommandError, match="another project"):
        call_command(
            "create_project",
            "--name",
            "Copycat",
            "--owner-email",
            "alice@example.test",
            "--verified-domain",
            "alice.test",
            "--json",
        )
    assert not Project.objects.filter(name="Copycat").exists()
    call_command("create_project", "--name", "Second", "--owner-email", "alice@example.test", "--json")
    assert User.objects.filter(email="alice@example.test").count() == 1
    assert Project.objects.filter(name="Second", memberships__user__email="alice@example.test").exists()


@pytest.mark.parametrize("bad", ["exa mple.com", "-bad-.com", "com", "127.0.0.1", "a" * 250 + ".com"])
def test_create_project_rejects_an_invalid_domain(bad):
    with pytest.raises(CommandError):
        call_command("create_project", "--name", "X", "--owner-email", "x@x.test", "--verified-domain", bad)
    assert not Project.objects.exists()
