"""Pages tested as people see them: Debian's chromium driven by Selenium through chromedriver, against
pytest-django's live server. Loaded for the whole suite by the root conftest (`pytest_plugins`).

- One browser per session for each way a person may come: with JavaScript, and with it off in the browser's
  preferences (a test asking for `any_browser` runs in both). A browser starts at its first use, so a run that
  selects no browser test starts none.
- `Browser.page_problems()` is what every page must pass, on the desktop and on a phone: axe-core finds no
  violation of any impact, the page has no horizontal scroll, no visible text is smaller than the page's floor and,
  where asked, every control is a tap target of at least 44 by 44 CSS pixels.
- With SCREENSHOT_DIR set (`make screenshots`), `Browser.screenshot(name)` writes `<name>.png` there.
- Without chromium or chromedriver (or Selenium) the tests marked `browser` skip, saying which is missing; with
  CI=true they fail instead, so that a CI machine which lost the packages cannot pass without them.
"""

import base64
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
DESKTOP = (1024, 640)
PHONE = (375, 667)
# Every rule of WCAG 2.0, 2.1 and 2.2 at levels A and AA, plus Deque's best practices; any violation fails,
# whatever its impact: the pages are few and ours, so there is no backlog to grade.
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]
# WCAG 2.5.5 (AAA) and the platforms' guidelines; axe checks the AA floor (24 px) on every page.
MIN_TAP_PX = 44

_AXE_RUN = """
const done = arguments[arguments.length - 1];
axe.run(document, {runOnly: {type: "tag", values: arguments[0]}, resultTypes: ["violations"]})
  .then(results => done(results.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map(n => n.target.join(" ")),
  }))));
"""

# The layout as a person on a phone meets it: what scrolls sideways, what text is too small to read, what control
# is too small to tap (a radio button or checkbox is tapped through its label).
_LAYOUT = """
const [minFont, minTap] = arguments;
const problems = [];
const page = document.documentElement;
// A phone zooms out to show a page wider than its screen, so compare with the layout width, not innerWidth.
if (page.clientWidth > screen.width) {
  problems.push(`laid out ${page.clientWidth}px wide on a ${screen.width}px screen (no viewport meta tag?)`);
}
if (page.scrollWidth > page.clientWidth) {
  problems.push(`scrolls sideways: ${page.scrollWidth}px wide in a ${page.clientWidth}px viewport`);
}
// Not what is clipped away for screen readers only (Django's "visually-hidden").
const visible = el => {
  if (el.getClientRects().length === 0) return false;
  for (let node = el; node; node = node.parentElement) {
    const style = getComputedStyle(node);
    if (style.visibility === "hidden" || (style.position === "absolute" && style.clip !== "auto")) return false;
  }
  return true;
};
const text = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (text.nextNode()) {
  const words = text.currentNode.textContent.trim();
  const el = text.currentNode.parentElement;
  if (!words || !visible(el)) continue;
  const size = parseFloat(getComputedStyle(el).fontSize);
  if (size < minFont) problems.push(`text "${words.slice(0, 40)}" is ${size}px, under ${minFont}px`);
}
if (minTap) {
  for (const control of document.querySelectorAll("a[href], button, input:not([type=hidden]), select, textarea")) {
    const target = ["radio", "checkbox"].includes(control.type) ? control.closest("label") || control : control;
    if (!visible(target)) continue;
    const box = target.getBoundingClientRect();
    if (box.width < minTap || box.height < minTap) {
      const name = (target.innerText || target.value || target.name || target.tagName).trim().slice(0, 40);
      problems.push(`"${name}" is a ${Math.round(box.width)}x${Math.round(box.height)}px tap target`);
    }
  }
}
return problems;
"""


def _missing() -> list[str]:
    try:
        import selenium  # noqa: F401
        import selenium_axe_python  # noqa: F401
    except ImportError:
        return ["selenium and selenium-axe-python (requirements-dev.txt)"]
    return [
        f"{path} (Debian package {package})"
        for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver"))
        if not shutil.which(path)
    ]


def _start(*, javascript: bool):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--hide-scrollbars"):
        options.add_argument(argument)
    if not javascript:
        options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    # An explicit driver path: Selenium then never looks for (or downloads) a driver of its own.
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    driver.get("data:text/html,<title>static</title><script>document.title = 'scripted'</script>")
    assert (driver.title == "scripted") is javascript, f"JavaScript should be {'on' if javascript else 'off'}"
    return driver


@pytest.fixture(scope="session")
def _drivers(django_db_setup):
    """Quits the browsers before the test database goes: a browser keeps its connections to the live server open,
    and each holds a database connection that would keep PostgreSQL from dropping it."""
    missing = _missing()
    if missing:
        reason = "browser tests need " + ", ".join(missing)
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{reason}; CI=true, so their absence is an error")
        pytest.skip(reason)
    started = {}

    def driver(*, javascript: bool):
        if javascript not in started:
            started[javascript] = _start(javascript=javascript)
        return started[javascript]

    yield driver
    for running in started.values():
        running.quit()


@dataclass
class Browser:
    """A session's browser, pointed at the live server, with no cookies and a desktop viewport to start with."""

    driver: object
    base_url: str

    def open(self, url: str) -> None:
        """`url` is a path or one of the service's absolute links (PUBLIC_URL is not the live server's address)."""
        path = url.split("://", 1)[1].split("/", 1)[1] if "://" in url else url.lstrip("/")
        self.driver.get(f"{self.base_url}/{path}")

    def viewport(self, size: tuple[int, int]) -> None:
        width, height = size
        self.driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": size == PHONE},
        )

    @property
    def text(self) -> str:
        """What the page shows, as a person reads it."""
        return self.driver.find_element("tag name", "body").text

    @property
    def title(self) -> str:
        return self.driver.title

    def press(self, label: str) -> None:
        """Press the button labelled `label` (and wait for the page it submits to)."""
        button = f"//button[normalize-space()='{label}'] | //input[@type='submit' and @value='{label}']"
        self._submit(self.driver.find_element("xpath", button))

    def follow(self, label: str) -> None:
        self._submit(self.driver.find_element("link text", label))

    def choose(self, label: str) -> None:
        """Tap the label of a radio button or checkbox, as a person does."""
        self.driver.find_element("xpath", f"//label[normalize-space()='{label}']").click()

    def fill(self, name: str, value: str) -> None:
        field = self.driver.find_element("name", name)
        field.clear()
        field.send_keys(value)

    def _submit(self, element) -> None:
        from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
        from selenium.webdriver.support.wait import WebDriverWait

        def left_the_page(_driver) -> bool:
            try:
                element.is_enabled()
            except StaleElementReferenceException:
                return True
            except WebDriverException as exc:
                # chromedriver's other word for a stale element, when it asks while the next page replaces it.
                if "does not belong to the document" in str(exc):
                    return True
                raise
            return False

        element.click()
        WebDriverWait(self.driver, 10).until(left_the_page)

    def axe_violations(self) -> list[dict]:
        from selenium_axe_python import Axe

        Axe(self.driver).inject()
        return self.driver.execute_async_script(_AXE_RUN, AXE_TAGS)

    def layout_problems(self, *, min_font_px: int, min_tap_px: int | None) -> list[str]:
        return self.driver.execute_script(_LAYOUT, min_font_px, min_tap_px or 0)

    def page_problems(self, name: str, *, min_font_px: int, min_tap_px: int | None = MIN_TAP_PX) -> list[str]:
        """The page as it is now, on the desktop and then on a phone: what axe and the phone layout find, each
        prefixed with the viewport. Saves both screenshots under SCREENSHOT_DIR as `<name>-desktop` and
        `<name>-phone`, and leaves the desktop viewport."""
        problems = []
        for label, size in (("desktop", DESKTOP), ("phone", PHONE)):
            self.viewport(size)
            problems += [
                f"{label}: axe {v['id']} ({v['impact']}): {v['help']} at {v['targets']}" for v in self.axe_violations()
            ]
            if size == PHONE:
                problems += [
                    f"phone: {p}" for p in self.layout_problems(min_font_px=min_font_px, min_tap_px=min_tap_px)
                ]
            self.screenshot(f"{name}-{label}")
        self.viewport(DESKTOP)
        return problems

    def screenshot(self, name: str) -> None:
        """The whole page, below the fold too, as `<name>.png` under SCREENSHOT_DIR (nothing without it)."""
        folder = os.environ.get("SCREENSHOT_DIR")
        if folder:
            shot = self.driver.execute_cdp_cmd(
                "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}
            )
            Path(folder).mkdir(parents=True, exist_ok=True)
            (Path(folder) / f"{name}.png").write_bytes(base64.b64decode(shot["data"]))


def _browser(drivers, live_server, *, javascript: bool) -> Browser:
    driver = drivers(javascript=javascript)
    driver.execute_cdp_cmd("Network.clearBrowserCookies", {})
    browser = Browser(driver=driver, base_url=live_server.url)
    browser.viewport(DESKTOP)
    return browser


# Fixture order matters at the end of the session, which tears down in reverse: browsers quit first, then the live
# server stops, then the test database is dropped.
@pytest.fixture
def browser(transactional_db, live_server, _drivers) -> Browser:
    """The browser with JavaScript on."""
    return _browser(_drivers, live_server, javascript=True)


@pytest.fixture(params=[True, False], ids=["javascript", "no-javascript"])
def any_browser(request, transactional_db, live_server, _drivers) -> Browser:
    """Each of the two browsers in turn: the test runs with JavaScript on and with it off."""
    return _browser(_drivers, live_server, javascript=request.param)
