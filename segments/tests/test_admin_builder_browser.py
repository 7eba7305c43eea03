"""The segment builder in a real browser (config/tests/browser.py): an operator builds a nested condition with the
controls and sees the live count, or writes the JSON (with JavaScript on and off); the saved segment has the members
the count promised, and the add and change pages pass axe and the phone checks (screenshots `admin-segment-*`)."""

import json

import pytest

from accounts.models import User
from config.tests.test_admin_browser import EMAIL, PASSWORD, log_in
from segments.models import Segment
from segments.tests.test_admin_builder import NESTED, shop  # noqa: F401 (the fixture)

pytestmark = pytest.mark.browser


@pytest.fixture
def operator(transactional_db):
    return User.objects.create_superuser(email=EMAIL, password=PASSWORD)


def open_add_page(browser, project) -> None:
    browser.open(f"/admin/login/?next=/admin/segments/segment/add/%3Fproject%3D{project.id}")
    log_in(browser)


def control(browser, path: str, part: str, field: str = "condition"):
    """A control of the builder of the form field `field`, for the node at `path` in the tree."""
    return browser.driver.find_element("id", f"cb-{field}-{path.replace('.', '-') or 'root'}-{part}")


def choose(browser, path: str, part: str, value: str, field: str = "condition") -> None:
    from selenium.webdriver.support.ui import Select

    Select(control(browser, path, part, field)).select_by_value(value)


def type_into(browser, path: str, part: str, text: str, field: str = "condition") -> None:
    from selenium.webdriver.common.keys import Keys

    box = control(browser, path, part, field)
    box.send_keys(Keys.CONTROL, "a")
    box.send_keys(text)


def press_control(browser, label: str) -> None:
    browser.driver.find_element("css selector", f'button[aria-label="{label}"]').click()


def wait_for_text(browser, selector: str, text: str) -> str:
    from selenium.webdriver.support.wait import WebDriverWait

    def shown(driver):
        found = driver.find_element("css selector", selector).text
        return found if text in found else False

    return WebDriverWait(browser.driver, 10).until(shown, f"{selector} never said {text!r}")


def test_an_operator_builds_a_nested_condition_and_sees_who_matches(browser, operator, project, shop):  # noqa: F811
    open_add_page(browser, project)
    browser.fill("name", "Engaged")
    wait_for_text(browser, ".cb-count", "contacts match")  # the starter filter, email contains ""

    choose(browser, "groups.0.filters.0", "field", "data.plan")
    choose(browser, "groups.0.filters.0", "operator", "equals")
    type_into(browser, "groups.0.filters.0", "value", "pro")
    press_control(browser, "Add nested group to group 1 of condition")
    nested = "groups.0.conditions"
    choose(browser, f"{nested}.groups.0.filters.0", "field", "event.purchase")
    choose(browser, f"{nested}.groups.0.filters.0", "operator", "triggeredWithin")
    type_into(browser, f"{nested}.groups.0.filters.0", "value", "7")
    choose(browser, nested, "logic", "OR")
    press_control(browser, "Add group to nested condition of group 1 of condition")
    choose(browser, f"{nested}.groups.1.filters.0", "field", "data.vip")
    choose(browser, f"{nested}.groups.1.filters.0", "operator", "equals")  # a boolean data field: true or false
    assert control(browser, f"{nested}.groups.1.filters.0", "value").tag_name == "select"
    press_control(browser, "Add group to condition")
    choose(browser, "", "logic", "OR")
    type_into(browser, "groups.1.filters.0", "value", "@big.")

    # ann (pro, bought), bob (pro, vip) and dan@big.test; the same people of the other project never.
    assert wait_for_text(browser, ".cb-count", "3 contacts match") == "3 contacts match"
    sample = browser.driver.find_element("css selector", ".cb-sample").text.split("\n")
    assert sorted(sample) == ["ann@example.test", "bob@example.test", "dan@big.test"]
    problems = browser.page_problems("admin-segment-add", min_font_px=12, min_tap_px=None)
    assert problems == [], "\n".join(problems)

    browser.press("Save")
    assert "was added successfully" in browser.text
    segment = Segment.objects.get(name="Engaged")
    assert segment.condition == NESTED and segment.member_count == 3

    browser.open(f"/admin/segments/segment/{segment.id}/change/")
    assert wait_for_text(browser, ".cb-count", "3 contacts match")
    problems = browser.page_problems("admin-segment-change", min_font_px=12, min_tap_px=None)
    assert problems == [], "\n".join(problems)


def test_a_refused_operator_is_shown_at_the_filter(browser, operator, project, shop):  # noqa: F811
    open_add_page(browser, project)
    browser.driver.find_element("css selector", ".cb-json summary").click()
    browser.fill("condition", json.dumps({"logic": "AND", "groups": [{"filters": [{"field": "subscribed", "operator": "contains", "value": "x"}]}]}))  # fmt: skip

    message = wait_for_text(browser, ".cb-filter .cb-error", "is not valid")
    assert message.startswith('Operator "contains" is not valid for field "subscribed"')
    problems = browser.page_problems("admin-segment-refused", min_font_px=12, min_tap_px=None)
    assert problems == [], "\n".join(problems)


def test_the_json_alone_makes_a_segment(any_browser, operator, project, shop):  # noqa: F811
    open_add_page(any_browser, project)
    any_browser.fill("name", "Written")
    summaries = any_browser.driver.find_elements("css selector", ".cb-json summary")
    if summaries:  # with JavaScript, the JSON is behind "Edit as JSON"
        summaries[0].click()
    any_browser.fill("condition", json.dumps(NESTED))
    any_browser.press("Save")

    assert "was added successfully" in any_browser.text
    assert Segment.objects.get(name="Written").member_count == 3


def test_a_static_segment_is_added_without_the_builder(any_browser, operator, project):
    from selenium.webdriver.support.ui import Select

    open_add_page(any_browser, project)
    any_browser.fill("name", "Hand-picked")
    Select(any_browser.driver.find_element("name", "type")).select_by_value("STATIC")
    # With JavaScript the builder steps aside (and posts no condition); without, the textarea is left empty.
    assert not any(row.is_displayed() for row in any_browser.driver.find_elements("css selector", ".cb-tree"))
    any_browser.press("Save")

    assert "was added successfully" in any_browser.text
    segment = Segment.objects.get(name="Hand-picked")
    assert segment.type == "STATIC" and segment.condition is None
