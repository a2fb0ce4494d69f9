"""The debugger page in a real headless Chromium (Debian's), against `godot-rag serve` on loopback."""
import os
import shutil
import sys

import pytest

from conftest import ROOT, free_port, start_http_server

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="needs the 'browser' extra (playwright)")
if not os.path.exists(CHROMIUM):
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)
OUT = ROOT / "test-output" / "web"


@pytest.fixture(scope="module")
def server(fixture_db):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_http_server([sys.executable, "-m", "godot_rag.cli", "serve", "--port", str(port),
                              "--data-dir", str(fixture_db.data_dir)], url, "/api/strategies")
    yield url
    proc.terminate()
    proc.wait(20)


@pytest.fixture(scope="module")
def page(server):
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
            "--disable-component-update", "--disable-sync"])
        pg = browser.new_page(viewport={"width": 1700, "height": 1100})
        pg.goto(server + "/")
        yield pg
        browser.close()


def _run(page, chunk=None):
    if chunk is not None:
        page.fill("#chunk", chunk)
    page.click("#run")
    page.wait_for_function("['done'].includes(document.querySelector('#status').textContent) || "
                           "document.querySelector('#status').className === 'error'", timeout=120_000)


def test_reference_chunk_b_d_f_accepts_coding_the_player(page):
    assert "func _process(delta)" in page.input_value("#chunk")  # the built-in example
    for s in "ABCDEF":
        page.set_checked(f"#st-{s}", s in "BDF")
    _run(page)
    assert page.text_content("#status") == "done"
    page.click("#tabs button:has-text('Strategy F')")
    final = page.locator(".col", has=page.locator("h2", has_text="7. final JSONL"))
    accepted = final.locator(".cand.accept")
    assert accepted.count() >= 1
    texts = [accepted.nth(i).text_content() for i in range(accepted.count())]
    assert any("getting_started/demo/coding_the_player" in t for t in texts)
    assert page.locator(".col h2", has_text="5. reranker").count() == 1
    assert page.locator(".badge.b-both").count() >= 1
    # selecting a candidate highlights its evidence in both texts
    accepted.first.click()
    assert page.locator("#detail mark").count() >= 2
    page.click("#tabs button:has-text('Strategy B')")
    assert page.locator(".col h2", has_text="2. BM25 candidates").count() == 1


def test_hostile_chunk_is_shown_as_text(page):
    hostile = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">\nfunc _ready():\n    pass'
    page.set_checked("#st-F", False)
    page.set_checked("#st-D", False)
    _run(page, hostile)
    assert page.evaluate("window.__pwned") is None
    page.click("#tabs button:has-text('Strategy B')")
    assert "<script>window.__pwned = 1</script>" in page.text_content("#json")
    assert "<script>window.__pwned = 1</script>" in page.text_content(".col pre.raw")
    assert page.locator("#out img").count() == 0 and page.locator("#out script").count() == 0


def test_compare_view_screenshot_and_errors(page):
    for s in "ABCDEF":
        page.set_checked(f"#st-{s}", s in "ABDF")
    page.fill("#chunk", page.evaluate("document.querySelector('#chunk').value") or "")
    page.select_option("#example", "0")
    page.click("#compare-btn")
    page.wait_for_function("document.querySelector('#status').textContent === 'done'", timeout=120_000)
    assert page.locator("table.cmp").count() >= 1
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / "compare.png"), full_page=True)
    assert (OUT / "compare.png").stat().st_size > 10_000
    page.fill("#chunk", "x" * 20001)
    page.click("#run")
    page.wait_for_function("document.querySelector('#status').className === 'error'", timeout=60_000)
    assert "413" in page.text_content("#status")
