import json

import pytest
from django.core.management import CommandError, call_command

from accounts.models import Project
from accounts.tenancy.keys import hash_key
from domains.models import Domain

pytestmark = pytest.mark.django_db


def test_first_run_creates_admin_project_and_sender_then_reprints_them(settings, tmp_path, capsys):
    settings.DEBUG = True
    settings.VAR_DIR = tmp_path
    call_command("bootstrap_dev")
    first = capsys.readouterr().out
    credentials = json.loads((tmp_path / "dev-credentials.json").read_text())
    project = Project.objects.get(pk=credentials["projectId"])
    assert project.secret_key_hash == hash_key(credentials["secretKey"])
    assert Domain.objects.get(project=project).name == "herald.test"
    assert credentials["secretKey"] in first and credentials["adminPassword"] in first
    call_command("bootstrap_dev")
    assert credentials["secretKey"] in capsys.readouterr().out
    assert Project.objects.count() == 1


def test_refuses_outside_debug(settings):
    settings.DEBUG = False
    with pytest.raises(CommandError):
        call_command("bootstrap_dev")


def test_a_lost_credentials_file_says_how_to_start_afresh(settings, tmp_path):
    """The secret key is kept only as a hash: without the file the keys cannot be shown again, so the command says
    so (it failed with the sender domain's conflict before)."""
    settings.DEBUG = True
    settings.VAR_DIR = tmp_path
    call_command("bootstrap_dev")
    (tmp_path / "dev-credentials.json").unlink()
    with pytest.raises(CommandError, match="is gone but the development database is still here; `make clean-dev`"):
        call_command("bootstrap_dev")
    assert Project.objects.count() == 1
