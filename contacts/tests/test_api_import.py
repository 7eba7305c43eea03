import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.models import Job
from contacts.models import Contact, ImportUpload
from contacts.tests.conftest import error_of, subscription_events

pytestmark = pytest.mark.django_db


def upload(client, content: bytes | str, name="contacts.csv"):
    if isinstance(content, str):
        content = content.encode()
    return client.post("/contacts/import", {"file": SimpleUploadedFile(name, content, "text/csv")}, format="multipart")


@pytest.fixture
def run_import(secret_client, run_on_commit):
    def run(content, client=None):
        response = run_on_commit(lambda: upload(client or secret_client, content))
        assert response.status_code == 202, response.content
        body = response.json()
        assert set(body) == {"jobId", "message"}
        status = (client or secret_client).get(f"/contacts/import/{body['jobId']}")
        assert status.status_code == 200
        return status.json()

    return run


def test_import_creates_and_types_values(run_import, project):
    job = run_import(
        "\ufeffEmail ; First Name;Zip;Age;Score;VIP;Phone;Note;id\n"
        "ADA@example.com;Ada;02134;36;4.5;true;+1 555 0100;;x\n"
        "bob@example.com;Bob;10001;-3;0;FALSE;1e5;hello;y\n"
    )
    assert job["type"] == "CONTACT_IMPORT" and job["status"] == "COMPLETED" and job["progress"] == 100
    assert job["result"] == {
        "totalRows": 2,
        "successCount": 2,
        "createdCount": 2,
        "updatedCount": 0,
        "unchangedCount": 0,
        "failureCount": 0,
        "errors": [],
    }
    assert job["createdAt"] and job["startedAt"] and job["finishedAt"]
    ada = Contact.objects.get(email="ada@example.com")
    assert ada.project_id == project.id and ada.subscribed is True
    assert ada.data == {
        "First Name": "Ada",
        "Zip": "02134",
        "Age": 36,
        "Score": 4.5,
        "VIP": True,
        "Phone": "+1 555 0100",
    }
    bob = Contact.objects.get(email="bob@example.com")
    assert bob.data == {
        "First Name": "Bob",
        "Zip": 10001,
        "Age": -3,
        "Score": 0,
        "VIP": False,
        "Phone": "1e5",
        "Note": "hello",
    }
    assert not ImportUpload.objects.exists()


def test_import_updates_existing_and_reports_bad_rows(run_import, make_contact, recorded):
    make_contact("ada@example.com", subscribed=True, data={"plan": "free", "keep": 1})
    make_contact("bob@example.com", subscribed=False, data={"plan": "pro"})
    make_contact("cat@example.com", subscribed=False, data={"plan": "pro"})
    job = run_import(
        "email,subscribed,plan\n"
        "ada@example.com,no,pro\n"  # data and subscription change
        "bob@example.com,,pro\n"  # unchanged: empty subscribed keeps the state
        "not-an-email,yes,x\n"
        "ADA@example.com,yes,y\n"  # duplicate in file
        "\n"
        "dan@example.com,maybe,z\n"
        ",yes,z\n"
        "cat@example.com,1,\n"  # subscription change only; empty plan ignored
        "eve@example.com,0,new\n"
    )
    assert job["result"]["totalRows"] == 8
    assert job["result"]["createdCount"] == 1
    assert job["result"]["updatedCount"] == 2
    assert job["result"]["unchangedCount"] == 1
    assert job["result"]["successCount"] == 4
    assert job["result"]["failureCount"] == 4
    assert job["result"]["errors"] == [
        {"row": 4, "email": "not-an-email", "error": "Invalid email"},
        {"row": 5, "email": "ada@example.com", "error": "Duplicate email in file"},
        {"row": 7, "email": "dan@example.com", "error": "Invalid subscribed value (use true/false, 1/0 or yes/no)"},
        {"row": 8, "email": None, "error": "Missing email"},
    ]
    ada = Contact.objects.get(email="ada@example.com")
    assert (ada.subscribed, ada.data) == (False, {"plan": "pro", "keep": 1})
    cat = Contact.objects.get(email="cat@example.com")
    assert (cat.subscribed, cat.data) == (True, {"plan": "pro"})
    eve = Contact.objects.get(email="eve@example.com")
    assert (eve.subscribed, eve.data) == (False, {"plan": "new"})
    assert subscription_events(ada) == ["contact.unsubscribed"]
    assert subscription_events(cat) == ["contact.subscribed"]
    assert sorted(subscription_events()) == ["contact.subscribed", "contact.unsubscribed"]
    assert sorted(recorded["single"]) == [
        ("contact.subscribed", "cat@example.com"),
        ("contact.unsubscribed", "ada@example.com"),
    ]


def test_import_batches_and_reports_only_100_errors(run_import, settings):
    settings.CONTACT_IMPORT_BATCH_SIZE = 7
    rows = [f"user{i}@example.com,{i}" for i in range(30)] + [f"bad{i},1" for i in range(120)]
    job = run_import("email,n\n" + "\n".join(rows))
    assert job["result"]["createdCount"] == 30 and job["result"]["failureCount"] == 120
    assert len(job["result"]["errors"]) == 100
    assert job["result"]["errors"][0]["row"] == 32
    assert Contact.objects.count() == 30


def test_import_quoted_cells_and_comma_delimiter(run_import):
    run_import('email,"Full, Name"\nada@example.com,"Lovelace, Ada"\n')
    assert Contact.objects.get().data == {"Full, Name": "Lovelace, Ada"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "The file is empty"),
        (b"\n\n  \n", "The file is empty"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00", "The file is not a UTF-8 CSV file"),
        (b"name,plan\nAda,pro\n", "The CSV file needs an email column"),
        (b'{"email": "ada@example.com"}', "The CSV file needs an email column"),
        (b"email,plan\n", "The CSV file has no rows after the header"),
        (b"email\x00,plan\nada@example.com\x00,1\n", "The file is not a CSV file"),
    ],
)
def test_import_rejects_bad_files_and_writes_nothing(secret_client, content, message):
    response = upload(secret_client, content)
    assert response.status_code == 422
    error = error_of(response)
    assert error["errors"][0]["field"] == "file" and error["errors"][0]["message"] == message
    assert not Job.objects.exists() and not ImportUpload.objects.exists() and not Contact.objects.exists()


def test_import_of_5_mb_is_accepted_and_one_byte_more_is_413(secret_client):
    limit = 5 * 1024 * 1024
    rows = b"".join(b"user%06d@example.com,%s\n" % (i, b"x" * 60) for i in range(64000))
    exact = (b"email,note\n" + rows)[: limit - 1] + b"\n"
    assert len(exact) == limit
    response = upload(secret_client, exact + b"x")
    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    assert not Job.objects.exists()
    # Accepted at exactly the limit (the job itself is not run here: the benchmark imports 5 MB end to end).
    assert upload(secret_client, exact).status_code == 202
    assert Job.objects.get().params["size"] == limit


def test_import_without_file_or_as_json(secret_client):
    response = secret_client.post("/contacts/import", {}, format="multipart")
    assert response.status_code == 422 and error_of(response)["errors"][0]["field"] == "file"
    response = secret_client.post("/contacts/import", {"file": "x"}, format="json")
    assert response.status_code == 400
    assert not Job.objects.exists()


def test_import_job_of_another_project_is_404(run_import, other_client, secret_client):
    job = run_import("email\nada@example.com\n")
    response = other_client.get(f"/contacts/import/{job['id']}")
    assert response.status_code == 404
    assert error_of(response)["code"] == "JOB_NOT_FOUND"
    assert error_of(secret_client.get("/contacts/import/nope"))["code"] == "JOB_NOT_FOUND"
    # A bulk job id is not an import job.
    assert secret_client.get(f"/contacts/bulk/{job['id']}").status_code == 404


def test_import_into_another_project_never_touches_ours(run_import, other_client, make_contact):
    mine = make_contact("ada@example.com", data={"plan": "free"})
    run_import("email,plan\nada@example.com,pro\n", client=other_client)
    mine.refresh_from_db()
    assert mine.data == {"plan": "free"}
    assert Contact.objects.count() == 2


def test_a_huge_or_broken_row_is_reported_and_the_import_goes_on(run_import):
    job = run_import(
        "email,note\n"
        + "ada@example.com,"
        + "x" * 140_000
        + "\nbob@example.com,ok\n"
        + "cat@example.com,"
        + "y" * 70_000
        + "\n"
    )
    assert job["status"] == "COMPLETED"
    assert [(e["row"], e["error"][:9]) for e in job["result"]["errors"]] == [(2, "Malformed"), (4, "Row data ")]
    assert list(Contact.objects.values_list("email", flat=True)) == ["bob@example.com"]
