#!/usr/bin/env python3
"""The web canvas of `cheng serve --http` in a real browser (headless Chromium through Selenium).

    python3 canvas.py URL ARTEFACT_DIR WORKSPACE

URL is the one the server printed (`http://127.0.0.1:PORT/?token=T`), ARTEFACT_DIR receives a
screenshot after each step (and the browser's console on failure), WORKSPACE is the server's
workspace (a copy of fixtures/workspaces/hello), whose files the approval steps check. Each may
also come from $CHENG_CANVAS_URL, $CHENG_CANVAS_ARTEFACTS and $CHENG_CANVAS_WORKSPACE.

What it does, as a person would: loads the page with the token (which becomes a cookie); checks
the palette (grouped, gated-off nodes greyed out and not placeable); builds the quickstart graph
(fixtures/graphs/quickstart.json) by dragging palette nodes onto the canvas (HTML5 drag and drop,
dispatched from JavaScript: Chromium under WebDriver does not run native drag and drop) and
filling their inputs in the side panel, connects ports with real mouse drags on Drawflow's dots,
has a mistyped connection refused, compares the graph JSON with the fixture; runs it, approving
each card, and sees every node succeed with its live output; runs two write_file nodes, approves
one and denies the other, and checks the workspace (one file written, the other not); cancels a
`sleep 30` and sees it cancelled; loads a graph from a file; reloads and finds the runs in the
history, opening one. Needs `pip install selenium` and Debian's `chromium` and `chromium-driver`.
Exits non-zero with a message on the first failure.
"""

import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
except ImportError:
    sys.exit("canvas.py: selenium is not installed (pip install selenium)")

REPO = Path(__file__).resolve().parents[4]
QUICKSTART = REPO / "fixtures" / "graphs" / "quickstart.json"
STEP_LIMIT = 30  # seconds any one thing may take to show up


class Failure(Exception):
    pass


def arg(index, env):
    value = sys.argv[index] if len(sys.argv) > index else os.environ.get(env)
    if not value:
        sys.exit(f"usage: canvas.py URL ARTEFACT_DIR WORKSPACE (or ${env})")
    return value


URL = arg(1, "CHENG_CANVAS_URL")
ARTEFACTS = Path(arg(2, "CHENG_CANVAS_ARTEFACTS"))
WORKSPACE = Path(arg(3, "CHENG_CANVAS_WORKSPACE"))
BASE = URL.split("/?", 1)[0].rstrip("/")


def program(name, *more):
    for candidate in (name, *more):
        found = shutil.which(candidate)
        if found:
            return found
    raise Failure(f"{name} is not installed (apt-get install chromium chromium-driver)")


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = program("chromium", "chromium-browser", "google-chrome")
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1920,1200", "--no-first-run", "--disable-extensions"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=program("chromedriver")), options=options)
    driver.set_window_size(1920, 1200)
    return driver


class Canvas:
    def __init__(self, driver):
        self.d = driver
        self.shot = 0

    # --- plumbing -------------------------------------------------------------------------

    def screenshot(self, name):
        self.shot += 1
        path = ARTEFACTS / f"{self.shot:02d}-{name}.png"
        self.d.save_screenshot(str(path))
        print(f"  screenshot {path.name}")

    def wait(self, condition, what, limit=STEP_LIMIT):
        end = time.monotonic() + limit
        last = None
        while time.monotonic() < end:
            try:
                value = condition()
                if value:
                    return value
            except WebDriverException as error:
                last = error
            time.sleep(0.1)
        raise Failure(f"timed out after {limit} s waiting for {what}" + (f" ({last.msg})" if last else ""))

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def one(self, css):
        return self.d.find_element(By.CSS_SELECTOR, css)

    def all(self, css):
        return self.d.find_elements(By.CSS_SELECTOR, css)

    def node(self, node_id):
        return self.one(f'.drawflow-node[data-node-id="{node_id}"]')

    def status(self, node_id):
        return self.node(node_id).get_attribute("data-status")

    def output(self, node_id):
        return self.js("return arguments[0].textContent", self.one(f'.node-output[data-output-for="{node_id}"]'))

    def message(self):
        box = self.one("#message")
        return "" if box.get_attribute("hidden") is not None else box.text

    def graph(self):
        """The graph as the canvas exports it, through its JSON view."""
        self.one("#show-json").click()
        text = self.wait(lambda: self.one("#graph-json").get_attribute("value"), "the graph JSON")
        self.one("#close-json").click()
        return json.loads(text)

    # --- building -------------------------------------------------------------------------

    def drop(self, node_type, x, y):
        """Drags palette node `node_type` onto the canvas at window point (x, y): the HTML5
        drag-and-drop events a browser fires, with one DataTransfer from dragstart to drop."""
        item = self.one(f'#palette [data-node-type="{node_type}"]')
        before = len(self.all(".drawflow-node"))
        self.js(
            """
            const [item, x, y] = arguments;
            const target = document.elementFromPoint(x, y);
            const data = new DataTransfer();
            const fire = (el, type) => el.dispatchEvent(new DragEvent(type,
                {bubbles: true, cancelable: true, dataTransfer: data, clientX: x, clientY: y}));
            fire(item, 'dragstart');
            fire(target, 'dragenter');
            fire(target, 'dragover');
            fire(target, 'drop');
            fire(item, 'dragend');
            """,
            item, x, y,
        )
        self.wait(lambda: len(self.all(".drawflow-node")) == before + 1, f"{node_type} to be placed")

    def add_by_click(self, node_type):
        before = len(self.all(".drawflow-node"))
        self.one(f'#palette [data-node-type="{node_type}"]').click()
        self.wait(lambda: len(self.all(".drawflow-node")) == before + 1, f"{node_type} to be added")

    def select(self, node_id):
        ActionChains(self.d).move_to_element(self.node(node_id).find_element(By.CSS_SELECTOR, ".node-id")).click().perform()
        self.wait(lambda: self.one("#inspector").get_attribute("data-node-id") == node_id, f"the side panel to show {node_id}")

    def fill(self, node_id=None, inputs=None, config=None, rename=None):
        """Fills the selected node's fields in the side panel (renaming it first)."""
        if rename:
            field = self.one("#node-id")
            field.send_keys(Keys.CONTROL, "a")
            field.send_keys(rename, Keys.TAB)
            self.wait(lambda: self.one("#inspector").get_attribute("data-node-id") == rename, f"the node to be renamed {rename}")
            node_id = rename
        for place, values in (("inputs", inputs or {}), ("config", config or {})):
            for port, value in values.items():
                control = self.one(f'#inspector section[data-place="{place}"] [data-port="{port}"] [data-widget]')
                control.clear()
                control.send_keys("\n".join(value) if isinstance(value, list) else str(value))
        return node_id

    def connect(self, src, out_port, dst, in_port):
        """A real mouse drag from output dot `src.out_port` to input dot `dst.in_port`."""
        out = self.one(f'.drawflow-node[data-node-id="{src}"] .outputs .output[data-port="{out_port}"]')
        inp = self.one(f'.drawflow-node[data-node-id="{dst}"] .inputs .input[data-port="{in_port}"]')
        ActionChains(self.d).move_to_element(out).click_and_hold().move_by_offset(30, 10) \
            .move_to_element(inp).release().perform()

    def edges(self):
        return sorted((e["from"], e["to"]) for e in self.graph().get("edges", []))

    # --- running --------------------------------------------------------------------------

    def run(self):
        before = {e.get_attribute("data-run-id") for e in self.all("#history [data-run-id]")}
        self.wait(lambda: self.one("#run").is_enabled(), "Run to be enabled")
        self.one("#run").click()
        self.wait(lambda: self.one("#run-status").get_attribute("data-status") == "running"
                  or self.message(), "the run to start")
        if self.message() and self.one("#run-status").get_attribute("data-status") != "running":
            raise Failure(f"the run did not start: {self.message()}")
        run_id = self.one("#run-status").text.split(":")[0]
        if run_id in before:
            raise Failure(f"the run id {run_id} was already in the history")
        return run_id

    def card(self, node_id):
        return self.wait(lambda: next(iter(self.all(f'.approval-card[data-node-id="{node_id}"]')), None),
                         f"the approval card of {node_id}")

    def answer(self, node_id, decision):
        card = self.card(node_id)
        text = card.find_element(By.CSS_SELECTOR, "pre").text
        card.find_element(By.CSS_SELECTOR, f'[data-decision="{decision}"]').click()
        self.wait(lambda: not self.all(f'.approval-card[data-node-id="{node_id}"]'), f"the card of {node_id} to go")
        return text

    def done(self):
        return self.one("#run-status").get_attribute("data-status") in ("succeeded", "failed", "cancelled")

    def finished(self, run_id, status, limit=STEP_LIMIT):
        self.wait(self.done, f"run {run_id} to finish", limit)
        got = self.one("#run-status").get_attribute("data-status")
        if got != status:
            nodes = "\n".join(f"  {n.get_attribute('data-node-id')}: {n.get_attribute('data-status')}: "
                              + n.find_element(By.CSS_SELECTOR, ".node-state").text for n in self.all(".drawflow-node"))
            raise Failure(f"run {run_id} finished {got}, expected {status}; nodes:\n{nodes}\nmessage: {self.message()!r}")

    def expect_status(self, node_id, status):
        self.wait(lambda: self.status(node_id) == status,
                  f"{node_id} to be {status} (it is {self.status(node_id)}: {self.node(node_id).text!r})")


def check(condition, message):
    if not condition:
        raise Failure(message)


def scenario(c):
    d = c.d
    print(f"loading {BASE}/ with the token")
    d.get(URL)
    c.wait(lambda: c.js("return document.body.dataset.ready === 'true'"), "the palette to load")
    check("token=" not in d.current_url, f"the token stayed in the address bar: {d.current_url}")
    categories = [e.get_attribute("data-category") for e in c.all("#palette [data-category]")]
    check({"files", "workspace"} <= set(categories), f"palette categories: {categories}")
    check(c.all('#palette [data-category="workspace"] [data-node-type="tools/workspace_shell"]'),
          "tools/workspace_shell is not in the workspace group")
    greyed = c.all("#palette .palette-node.unavailable")
    check(greyed, "no node is greyed out (tools/code_python should be gated off)")
    for item in greyed:
        check(item.get_attribute("title"), f"{item.get_attribute('data-node-type')} is greyed out without a reason")
        check(item.get_attribute("draggable") != "true", f"{item.get_attribute('data-node-type')} is draggable")
    python = c.one('#palette [data-node-type="tools/code_python"]')
    check("unavailable" in python.get_attribute("class") and "CHENG_ENABLE_CODE_PYTHON" in python.get_attribute("title"),
          f"tools/code_python: class {python.get_attribute('class')!r}, title {python.get_attribute('title')!r}")
    python.click()
    time.sleep(0.3)
    check(not c.all(".drawflow-node"), "clicking a greyed-out node placed it")
    c.screenshot("loaded")

    print("building the quickstart graph")
    area = c.one("#drawflow").rect
    left, top = area["x"], area["y"]
    c.drop("tools/workspace_shell", left + 150, top + 40)
    c.fill(rename="list", inputs={"command": "ls", "args": ["-l"], "purpose": "See what the workspace holds"})
    c.drop("tools/workspace_shell", left + 620, top + 40)
    c.fill(rename="readme", inputs={"command": "cat", "args": ["README.md"]})
    c.drop("tools/workspace_shell", left + 150, top + 520)
    c.fill(rename="greet", inputs={"command": "sh", "args": ["hello.sh", "cheng"], "purpose": "Run the workspace's own script"},
           config={"command_whitelist": "sh"})
    panel = c.one("#inspector").text.lower()
    check("agent inputs" in panel and "author settings" in panel, f"the side panel has no agent/author split:\n{panel}")
    check(c.all('#inspector section[data-place="config"] [data-port="allow_shell_string"] input[type="checkbox"]'),
          "allow_shell_string is not an author-settings checkbox")
    check(not c.all('#inspector [data-port="sandbox_root"]'), "the engine-only port sandbox_root is shown")
    check(not c.all('.drawflow-node [data-port="sandbox_root"]'), "the engine-only port sandbox_root is a port")
    c.screenshot("nodes-placed")

    c.connect("list", "success", "readme", "cwd")  # boolean into string: refused
    c.wait(lambda: "removed" in c.message(), "the mistyped connection to be refused")
    check("cwd" in c.message(), f"the refusal does not name the port: {c.message()!r}")
    check(c.edges() == [], f"the refused connection stayed: {c.edges()}")
    c.screenshot("connection-refused")
    c.one("#message").click()
    c.connect("list", "summary", "readme", "purpose")
    c.wait(lambda: c.edges() == [("list.summary", "readme.purpose")], "the connection list.summary → readme.purpose")
    time.sleep(0.5)  # the connection's check
    check(len(c.all(".drawflow .connection")) == 1, "the connection was not kept")
    check(not c.message(), f"the good connection was refused: {c.message()!r}")

    want = json.loads(QUICKSTART.read_text())
    got = c.graph()
    shape = lambda g: (
        sorted((n["id"], n["type"], json.dumps(n.get("inputs", {}), sort_keys=True), json.dumps(n.get("config", {}), sort_keys=True))
               for n in g["nodes"]),
        sorted((e["from"], e["to"]) for e in g.get("edges", [])))
    check(shape(got) == shape(want), f"the drawn graph differs from {QUICKSTART.name}:\n{json.dumps(got, indent=2)}")
    c.screenshot("quickstart-built")

    print("running it")
    quickstart_run = c.run()
    answered = set()
    end = time.monotonic() + 60
    while len(answered) < 3 and time.monotonic() < end and not c.done():
        for node_id in [card.get_attribute("data-node-id") for card in c.all(".approval-card")]:
            if node_id not in answered:
                if not answered:
                    c.screenshot("approval-card")
                text = c.answer(node_id, "approve")
                check(text.strip(), f"the card of {node_id} is empty")
                answered.add(node_id)
        time.sleep(0.1)
    c.finished(quickstart_run, "succeeded")
    check(answered == {"list", "readme", "greet"}, f"approval cards answered: {answered}")
    for node_id in ("list", "readme", "greet"):
        c.expect_status(node_id, "succeeded")
    check("hello.sh" in c.output("list"), f"list's output: {c.output('list')!r}")
    readme = (WORKSPACE / "README.md").read_text().strip().splitlines()[0]
    check(readme in c.output("readme"), f"readme's output: {c.output('readme')!r}")
    check("hello, cheng" in c.output("greet"), f"greet's output: {c.output('greet')!r}")
    c.screenshot("quickstart-ran")

    print("approving one write and denying another")
    c.one("#clear").click()
    check(not c.all(".drawflow-node"), "Clear left nodes")
    for name in ("approved.txt", "denied.txt"):
        check(not (WORKSPACE / name).exists(), f"{name} exists before the run")
    c.add_by_click("tools/write_file")
    c.fill(rename="keep", inputs={"file_path": "approved.txt", "content": "written after approval"})
    c.add_by_click("tools/write_file")
    c.fill(rename="drop", inputs={"file_path": "denied.txt", "content": "never written"})
    c.screenshot("writes-built")
    writes = c.run()
    card = c.answer("keep", "approve")
    check("approved.txt" in card, f"the card of keep does not name its file:\n{card}")
    c.answer("drop", "deny")
    c.finished(writes, "failed")
    c.expect_status("keep", "succeeded")
    c.expect_status("drop", "denied")
    check((WORKSPACE / "approved.txt").is_file(), "approved.txt was not written after approval")
    check((WORKSPACE / "approved.txt").read_text().startswith("written after approval"), "approved.txt has other content")
    check(not (WORKSPACE / "denied.txt").exists(), "denied.txt was written although it was denied")
    c.screenshot("approve-and-deny")

    print("cancelling a long run")
    c.one("#clear").click()
    c.add_by_click("tools/workspace_shell")
    c.fill(rename="nap", inputs={"command": "sleep", "args": ["30"]})
    long_run = c.run()
    c.answer("nap", "approve")
    c.expect_status("nap", "running")
    time.sleep(1.0)  # the process is up
    started = time.monotonic()
    c.screenshot("long-run")
    c.one("#cancel").click()
    c.finished(long_run, "cancelled", limit=20)
    c.expect_status("nap", "cancelled")
    check(time.monotonic() - started < 20, "cancelling took as long as the sleep")
    c.screenshot("cancelled")

    print("loading a graph from a file")
    c.one("#clear").click()
    c.one("#load").send_keys(str(QUICKSTART))
    c.wait(lambda: len(c.all(".drawflow-node")) == 3, "the loaded graph's nodes")
    check(shape(c.graph()) == shape(want), "the loaded graph differs from the file")
    check(len(c.all(".drawflow .connection")) == 1, "the loaded graph's edge is not drawn")
    c.screenshot("loaded-from-file")

    print("reloading: the history")
    d.refresh()
    c.wait(lambda: c.js("return document.body.dataset.ready === 'true'"), "the page to load again")
    c.wait(lambda: len(c.all("#history [data-run-id]")) >= 3, "three runs in the history")
    listed = [(e.get_attribute("data-run-id"), e.get_attribute("data-status")) for e in c.all("#history [data-run-id]")]
    expected = [(long_run, "cancelled"), (writes, "failed"), (quickstart_run, "succeeded")]
    check(listed[:3] == expected, f"history (newest first): {listed}, expected {expected}")
    c.one(f'#history [data-run-id="{quickstart_run}"] button').click()
    c.wait(lambda: c.one("#run-detail").get_attribute("data-run-id") == quickstart_run, "the run's detail")
    detail = c.one("#detail-result").text
    check(c.one("#run-detail").get_attribute("data-status") == "succeeded", "the detail's status")
    check("hello, cheng" in detail and "greet: succeeded" in detail, f"the run's result:\n{detail[:2000]}")
    c.screenshot("history")
    c.one("#open-run").click()
    c.wait(lambda: len(c.all(".drawflow-node")) == 3, "the run's graph on the canvas")
    for node_id in ("list", "readme", "greet"):
        c.expect_status(node_id, "succeeded")
    check("hello, cheng" in c.output("greet"), "the replayed run has no output")
    c.screenshot("history-opened")


def main():
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    for old in ARTEFACTS.glob("*.png"):
        old.unlink()
    try:
        driver = browser()
    except (Failure, WebDriverException) as error:
        print(f"canvas.py: FAILED: the browser did not start: {error}", file=sys.stderr)
        return 1
    c = Canvas(driver)
    try:
        scenario(c)
        print("canvas.py: all steps passed")
        return 0
    except Exception as error:  # a failed step: say which, and keep what the browser saw
        print(f"canvas.py: FAILED: {error}", file=sys.stderr)
        if not isinstance(error, Failure):
            traceback.print_exc()
        try:
            c.screenshot("failure")
            (ARTEFACTS / "failure.html").write_text(driver.page_source)
            logs = "\n".join(f"{e['level']} {e['message']}" for e in driver.get_log("browser"))
            (ARTEFACTS / "console.log").write_text(logs)
            if logs:
                print("browser console:\n" + logs, file=sys.stderr)
        except WebDriverException:
            pass
        return 1
    finally:
        driver.quit()


if __name__ == "__main__":
    sys.exit(main())
