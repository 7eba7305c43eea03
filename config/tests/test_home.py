"""The service's own address opened in a browser: a front page saying what it is with its links (the admin's only
for whoever may open the admin), and an icon, instead of a JSON 404."""

import io

import pytest
from django.test import Client
from PIL import Image

pytestmark = pytest.mark.django_db


def test_the_front_page_says_what_the_service_is_and_links_its_reference(settings):
    page = Client().get("/")
    assert page.status_code == 200 and page["Content-Type"].startswith("text/html")
    text = page.content.decode()
    assert f"Herald {settings.SPECTACULAR_SETTINGS['VERSION']}" in text
    assert 'href="/api/docs/"' in text and 'href="/health"' in text and 'href="/admin/"' in text
    # Only reading: anything else is the API's 405.
    refused = Client().post("/")
    assert refused.status_code == 405 and refused.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


def test_the_admin_link_is_shown_only_where_the_admin_answers(settings):
    settings.ADMIN_NETWORKS = ["10.0.0.0/8"]
    outside = Client(REMOTE_ADDR="203.0.113.9").get("/").content.decode()
    inside = Client(REMOTE_ADDR="10.1.2.3").get("/").content.decode()
    assert 'href="/admin/"' not in outside and 'href="/admin/"' in inside


def test_the_icon_is_an_icon():
    icon = Client().get("/favicon.ico")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/x-icon"
    assert Image.open(io.BytesIO(icon.content)).format == "ICO"


@pytest.mark.browser
def test_the_front_page_is_accessible_and_fits_a_phone(browser):
    browser.open("/")
    assert "Herald" in browser.title
    assert browser.page_problems("front-page", min_font_px=16) == []
