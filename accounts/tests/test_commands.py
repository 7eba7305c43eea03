"""`rotate_keys`: new keys printed once, the old ones refused at once through the shared key cache."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import Project
from conftest import client_with

pytestmark = [pytest.mark.django_db, pytest.mark.urls("config.tests.probe_urls")]


def rotate(*args) -> str:
    out = StringIO()
    call_command("rotate_keys", *args, stdout=out)
    return out.getvalue()


def test_rotation_prints_the_new_keys_and_the_old_ones_fail_at_once(project, redis_cache, settings):
    settings.API_KEY_CACHE_SECONDS = 300
    old = client_with(project.keys.secret_key)
    assert old.get("/probe/secret").status_code == 200  # now in the shared cache
    keys = json.loads(rotate("--project", str(project.id), "--json"))
    assert set(keys) == {"publicKey", "secretKey"}
    assert keys["publicKey"].startswith("pk_") and keys["secretKey"].startswith("sk_")
    assert old.get("/probe/secret").json()["error"]["code"] == "UNAUTHORIZED"
    assert client_with(keys["secretKey"]).get("/probe/secret").status_code == 200
    assert Project.objects.get(pk=project.id).public_key == keys["publicKey"]


def test_text_output_and_a_dry_run(project):
    before = Project.objects.values_list("public_key", "secret_key_hash").get(pk=project.id)
    assert "nothing changed" in rotate("--project", str(project.id), "--dry-run")
    assert Project.objects.values_list("public_key", "secret_key_hash").get(pk=project.id) == before
    text = rotate("--project", str(project.id))
    assert "Secret key: sk_" in text and "shown once" in text
    assert Project.objects.get(pk=project.id).public_key in text


def test_the_other_project_keeps_its_keys(project, other_project):
    rotate("--project", str(project.id))
    assert client_with(other_project.keys.secret_key).get("/probe/secret").status_code == 200


@pytest.mark.parametrize("project_id", ["nope", "00000000-0000-0000-0000-000000000000"])
def test_an_unknown_project_is_refused(db, project_id):
    with pytest.raises(CommandError, match=f'^Project "{project_id}" not found$') as refused:
        rotate("--project", project_id)
    assert refused.value.returncode == 1


def test_the_message_alone_goes_to_stderr_with_status_1(db, capsys):
    from django.core.management import ManagementUtility

    with pytest.raises(SystemExit) as exited:
        ManagementUtility(["manage.py", "rotate_keys", "--project", "nope"]).execute()
    assert exited.value.code == 1
    assert capsys.readouterr().err.strip() == 'Project "nope" not found'
