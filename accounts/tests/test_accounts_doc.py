"""docs/accounts.md's shell examples, run as written with curl against the live test server."""

import os
import re
import subprocess
from pathlib import Path

import pytest

from accounts.models import Invitation, Membership
from contacts.models import Contact

DOC = Path(__file__).resolve().parents[2] / "docs" / "accounts.md"


def shell_blocks() -> list[str]:
    return re.findall(r"^```sh\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)


@pytest.mark.django_db(transaction=True)
def test_the_curl_examples_work_against_the_live_server(live_server, tmp_path):
    script = "\n".join(shell_blocks())
    assert "curl" in script
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "HERALD": live_server.url},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("401")
    owner = Membership.objects.select_related("project", "user").get(project__name="Shop")
    assert (owner.user.email, owner.role) == ("ada@example.com", "OWNER")
    assert Contact.objects.filter(project=owner.project, email="customer@example.com").exists()
    assert Invitation.objects.filter(project=owner.project, email="grace@example.com", role="ADMIN").exists()
