"""The composer in a real browser (config/tests/browser.py): an operator composes a campaign with the live preview and
count, saves it and schedules it; without JavaScript the Preview button opens the same preview as a page. Every page
passes axe and the phone checks, its screenshots going to docs/screenshots with `make screenshots`."""

import pytest
from selenium.webdriver.support.wait import WebDriverWait

from accounts.models import User
from campaigns.models import Campaign
from contacts.models import Contact
from segments.tests.test_admin_builder_browser import choose, type_into

pytestmark = pytest.mark.browser

EMAIL, PASSWORD = "operator@example.test", "the operator's password"


@pytest.fixture
def operator(db):
    return User.objects.create_superuser(email=EMAIL, password=PASSWORD)


@pytest.fixture
def contacts(project, other_project):
    p = project.project
    Contact.objects.create(project=p, email="ann@example.test", data={"firstName": "Ann", "plan": "pro"})
    Contact.objects.create(project=p, email="ben@example.test", data={"plan": "free"})
    Contact.objects.create(project=other_project.project, email="oli@example.test", data={"plan": "pro"})


def open_composer(browser) -> None:
    browser.open("/admin/login/?next=/admin/campaigns/campaign/add/")
    browser.fill("username", EMAIL)
    browser.fill("password", PASSWORD)
    browser.press("Log in")
    assert "choose its project" in browser.text


def compose(browser) -> None:
    browser.fill("name", "November news")
    browser.fill("from_email", "news@alice.test")
    browser.fill("subject", "Hello {{ firstName | default: 'there' }}")
    browser.fill("body", "<h1>News</h1>\n<p>Hi {{ firstName }}, your plan is {{ plan }}.</p>")
    browser.fill("preview_contact", "ann@example.test")


def shows(browser, element_id: str, text: str) -> None:
    """Wait until the element's text contains `text` (the live panel answers after a pause in typing)."""
    WebDriverWait(browser.driver, 10).until(
        lambda driver: text in driver.find_element("id", element_id).text,
        f"#{element_id} never showed {text!r}",
    )


def framed_text(browser) -> str:
    """What the preview's frame shows."""
    browser.driver.switch_to.frame(browser.driver.find_element("id", "composer-frame"))
    try:
        return browser.driver.find_element("tag name", "body").text
    finally:
        browser.driver.switch_to.default_content()


def test_an_operator_composes_previews_saves_and_schedules(browser, operator, project, contacts):
    open_composer(browser)
    assert browser.page_problems("admin-campaign-choose-project", min_font_px=12, min_tap_px=None) == []
    browser.driver.find_element("xpath", "//select[@name='project']/option[normalize-space()=\"Alice's shop\"]").click()
    browser.press("Continue")

    compose(browser)
    shows(browser, "composer-subject", "Hello Ann")
    assert "Hi Ann, your plan is pro." in framed_text(browser)
    shows(browser, "composer-recipients", "Recipients now: 2")  # ALL: Ann and Ben, not the other project's Oli

    browser.choose("Contacts matching a condition")  # the segments' condition builder, with its own live count
    filter_ = "groups.0.filters.0"
    choose(browser, filter_, "field", "data.plan", field="audience_condition")
    choose(browser, filter_, "operator", "equals", field="audience_condition")
    type_into(browser, filter_, "value", "pro", field="audience_condition")
    shows(browser, "composer-recipients", "Recipients now: 1")
    browser.fill("body", "<p>Hi</p>\n{% if firstName %}")
    shows(browser, "composer-errors", "line 2, column")
    browser.fill("body", "<h1>News</h1>\n<p>Hi {{ firstName }}, your plan is {{ plan }}.</p>")
    WebDriverWait(browser.driver, 10).until(
        lambda driver: driver.find_element("id", "composer-errors").text == "", "the error stayed after the fix"
    )
    browser.driver.execute_script("document.getElementById('composer-frame').scrollIntoView()")
    assert browser.page_problems("admin-campaign-composer", min_font_px=12, min_tap_px=None) == []

    browser.press("Save and continue editing")
    campaign = Campaign.objects.get()
    assert (campaign.name, campaign.audience_type, campaign.status) == ("November news", "FILTERED", "DRAFT")
    assert "was added successfully" in browser.text

    browser.driver.execute_script("document.getElementById('id_scheduled_for').value = '2030-01-01T09:00'")
    browser.press("Schedule")
    assert "Campaign scheduled for 2030-01-01T09:00:00" in browser.text
    assert Campaign.objects.get().status == "SCHEDULED"
    browser.driver.execute_script("document.getElementById('composer-frame').scrollIntoView()")
    assert browser.page_problems("admin-campaign-scheduled", min_font_px=12, min_tap_px=None) == []


def test_the_preview_button_opens_the_preview(request, any_browser, operator, project, contacts):
    open_composer(any_browser)
    any_browser.press("Continue")  # the first project, Alice's shop
    compose(any_browser)
    composer = any_browser.driver.current_window_handle
    any_browser.driver.find_element("name", "_preview").click()
    WebDriverWait(any_browser.driver, 10).until(lambda driver: len(driver.window_handles) == 2)
    any_browser.driver.switch_to.window(next(h for h in any_browser.driver.window_handles if h != composer))
    WebDriverWait(any_browser.driver, 10).until(lambda driver: "Hello Ann" in any_browser.text)
    assert "Recipients now: 2" in any_browser.text and "For ann@example.test" in any_browser.text
    if request.node.callspec.id == "javascript":  # axe runs as a script
        assert any_browser.page_problems("admin-campaign-preview", min_font_px=12, min_tap_px=None) == []
    any_browser.driver.close()
    any_browser.driver.switch_to.window(composer)
    assert not Campaign.objects.exists()  # a preview saves nothing
