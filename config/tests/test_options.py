"""`OPTIONS` on any endpoint answers which methods it takes (found by fuzzing the schema: it was a 500 on every
viewset, whose actions each have their own input and output serializers)."""

import uuid

import pytest

pytestmark = pytest.mark.django_db

PATHS = [
    "/contacts",
    "/contacts/lookup",
    "/contacts/import",
    "/contacts/bulk-delete",
    "/events/track",
    "/templates",
    f"/templates/{uuid.uuid4()}/duplicate",
    "/segments",
    f"/segments/{uuid.uuid4()}/compute",
    "/domains",
    "/v1/send",
]


@pytest.mark.parametrize("path", PATHS)
def test_options_lists_the_allowed_methods(secret_client, path):
    response = secret_client.options(path)
    assert response.status_code == 200, response.content
    assert "OPTIONS" in response["Allow"]
    assert set(response.json()) >= {"name", "description"} and "actions" not in response.json()


def test_options_needs_a_key_like_any_other_method(client):
    response = client.options("/contacts")
    assert response.status_code == 401 and response.json()["error"]["code"] == "MISSING_AUTH"
