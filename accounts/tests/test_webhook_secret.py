import base64
import json

import pytest

from accounts.models import Project
from accounts.tenancy.services import project_regenerate_webhook_secret, project_webhook_secret

pytestmark = pytest.mark.django_db


def test_the_secret_is_made_once_in_the_standard_webhooks_form_and_stored_encrypted(project, other_project):
    secret = project_webhook_secret(project=project.project)
    assert secret.startswith("whsec_") and len(base64.b64decode(secret.removeprefix("whsec_"))) == 32
    # A second read, from a fresh row, gives the same secret; another project has its own.
    assert project_webhook_secret(project=Project.objects.get(pk=project.id)) == secret
    assert project_webhook_secret(project=other_project.project) != secret
    stored = Project.objects.filter(pk=project.id).values().get()
    assert secret.removeprefix("whsec_") not in json.dumps(stored, default=str)


def test_a_stale_copy_of_the_project_reads_the_secret_another_caller_made_first(project):
    stale = Project.objects.get(pk=project.id)
    first = project_webhook_secret(project=project.project)
    assert project_webhook_secret(project=stale) == first


def test_regeneration_replaces_the_secret(project):
    old = project_webhook_secret(project=project.project)
    new = project_regenerate_webhook_secret(project=project.project)
    assert new != old and new.startswith("whsec_")
    assert project_webhook_secret(project=Project.objects.get(pk=project.id)) == new
