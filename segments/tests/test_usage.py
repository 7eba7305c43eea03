"""The contacts fields and events endpoints report the segments that use a field or an event."""

from segments.tests.test_api_segments import create

USES = {
    "logic": "AND",
    "groups": [
        {
            "filters": [{"field": "data.plan.tier", "operator": "exists"}],
            "conditions": {
                "logic": "OR",
                "groups": [{"filters": [{"field": "event.purchase", "operator": "triggered"}]}],
            },
        }
    ],
}


def test_field_and_event_usage(secret_client, other_client):
    segment = create(secret_client, name="Buyers", condition=USES).json()
    create(other_client, name="Theirs", condition=USES)
    usage = secret_client.get("/contacts/fields/data.plan/usage").json()
    assert usage["usedIn"]["segments"] == [{"id": segment["id"], "name": "Buyers"}]
    assert usage["canDelete"] is False
    assert secret_client.delete("/contacts/fields/data.plan").status_code == 409
    assert secret_client.get("/contacts/fields/data.planet/usage").json()["usedIn"]["segments"] == []
    events = secret_client.get("/events/purchase/usage").json()
    assert events["usedInSegments"] == [{"id": segment["id"], "name": "Buyers"}]
    assert events["canDelete"] is False
    assert secret_client.delete("/events/purchase").status_code == 409
    assert secret_client.get("/events/login/usage").json()["usedInSegments"] == []
