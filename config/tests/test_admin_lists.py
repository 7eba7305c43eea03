"""Every admin change list opens, searches and filters; those of the tables that grow with the traffic never count
their rows exactly (an estimated-count paginator, no "show all" total)."""

import pytest
from django.contrib import admin

from core.counts import EstimatedCountPaginator

pytestmark = pytest.mark.django_db

# The tables that grow with mail, events and contacts (millions of rows), as app_label.model_name.
BIG_TABLES = {
    "contacts.contact",
    "contacts.event",
    "messaging.email",
    "messaging.suppression",
    "messaging.webhookreceipt",
    "messaging.emailstatshour",
    "messaging.attachmentbundle",
    "workflows.workflowexecution",
    "accounts.job",
    "accounts.idempotencyrecord",
}
REGISTERED = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label_lower)


def test_every_big_table_is_registered():
    assert {model._meta.label_lower for model, _ in REGISTERED} >= BIG_TABLES


@pytest.mark.parametrize("model, model_admin", REGISTERED, ids=[model._meta.label_lower for model, _ in REGISTERED])
def test_every_change_list_opens_and_searches(admin_client, project, model, model_admin):
    url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
    assert admin_client.get(url).status_code == 200
    if model_admin.search_fields:
        assert admin_client.get(url, {"q": "alice"}).status_code == 200
    if model._meta.label_lower in BIG_TABLES:
        assert model_admin.paginator is EstimatedCountPaginator
        assert model_admin.show_full_result_count is False
        assert model_admin.list_display != ("__str__",)
