"""The debugger page in a real headless Chromium (Debian's), against `godot-rag serve` on loopback, at the
size a new user's laptop shows it (1366x768). The server is the real CLI on the small fixture corpus."""
import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import zlib

import pytest

from conftest import REFERENCE_CHUNK, ROOT, free_port, launch_chromium
from godot_rag.store.guide_model import SHIPPED

pytestmark = [pytest.mark.browser, pytest.mark.slow]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
sync_api = pytest.importorskip("playwright.sync_api", reason="needs the 'browser' extra (playwright)")
if not os.path.exists(CHROMIUM):
    pytest.skip("Debian's chromium is not installed", allow_module_level=True)
OUT = ROOT / "test-output" / "web"
W, H = 1366, 768
THREE_D = "tutorials/demo3d/player_movement#000"  # the 3D tutorial: Vector3 where the chunk has Vector2


class Served:
    """`godot-rag serve` with its stdout and stderr read line by line (the ready message, the warm-up log)."""

    def __init__(self, data_dir):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lines: list[tuple[float, str, str]] = []  # (time, stream, line)
        self.ready_at: float | None = None
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "godot_rag.cli", "serve", "--port", str(self.port), "--data-dir", str(data_dir)],
            env=dict(os.environ, HF_HUB_OFFLINE="1"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for stream, name in ((self.proc.stdout, "stdout"), (self.proc.stderr, "stderr")):
            threading.Thread(target=self._read, args=(stream, name), daemon=True).start()

    def _read(self, stream, name):
        for line in stream:  # keeps draining after the ready line, so the server never blocks on a full pipe
            self.lines.append((time.monotonic(), name, line.rstrip("\n")))
            if line.startswith("godot-rag serving on ") and self.ready_at is None:
                self.ready_at = time.monotonic()

    def wait_ready(self, timeout=120):
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.ready_at is None and self.proc.poll() is None:
            time.sleep(0.1)
        return self.ready_at is not None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


@pytest.fixture(scope="module")
def served(fixture_db):
    s = Served(fixture_db.data_dir)
    ready = s.wait_ready()
    if not ready:  # still usable for the page tests if it answers; the ready-message test fails on its own
        import httpx

        for _ in range(60):
            try:
                if httpx.get(s.url + "/api/strategies", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        else:
            s.stop()
            pytest.fail("godot-rag serve did not start:\n" + "\n".join(line for _, _, line in s.lines[-20:]))
    yield s
    s.stop()


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = launch_chromium(p, CHROMIUM)
        yield b
        b.close()


@pytest.fixture(scope="module")
def page(browser, served):
    pg = browser.new_page(viewport={"width": W, "height": H})
    errors = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.goto(served.url + "/")
    pg.wait_for_function("document.body.dataset.state === 'ready'", timeout=30_000)
    pg.errors = errors
    yield pg
    pg.close()
    assert not errors, errors  # no uncaught script error on the page, in any test


def _wait_done(page, timeout=60_000):
    page.wait_for_function("['done', 'error'].includes(document.body.dataset.state) && !document.querySelector('#run').disabled",
                           timeout=timeout)


def _run(page, strategy="F", chunk=None):
    if chunk is not None:
        page.fill("#chunk", chunk)
    page.check(f"#st-{strategy}")
    page.click("#run")
    _wait_done(page)


def _row(page, rid):
    return page.locator(f"#matrix tr.row[data-id='{rid}']")


def _cell(page, rid, stage):
    return _row(page, rid).locator(f"td.s-{stage}")


def _inside_viewport(box):
    return (box is not None and box["x"] >= 0 and box["y"] >= 0
            and box["x"] + box["width"] <= W + 0.5 and box["y"] + box["height"] <= H + 0.5)


def _png_ok(path, min_w=W, min_h=H):
    """A real PNG, at least the viewport's size, with something drawn on it (not one flat colour)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    w, h = struct.unpack(">II", data[16:24])
    assert w >= min_w and h >= min_h, f"{path} is {w}x{h}, smaller than the {min_w}x{min_h} viewport"
    idat, pos = b"", 8
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = len(raw) // h
    rows = {raw[y * stride + 1:(y + 1) * stride] for y in range(0, h, 7)}
    assert len(rows) > 30, f"{path}: almost every row is the same: nothing rendered"
    assert len(set(raw[1::13])) > 40, f"{path}: too few colours: nothing rendered"


# ---------------------------------------------------------------------------------------------------------------
def test_serve_prints_ready_after_the_warm_up(served):
    import httpx

    assert served.ready_at is not None, "no 'godot-rag serving on' line:\n" + "\n".join(l for _, _, l in served.lines)
    ready = [(t, stream, line) for t, stream, line in served.lines if line.startswith("godot-rag serving on ")]
    assert ready[0][2] == f"godot-rag serving on {served.url}"
    assert len(ready) == 1
    warm = [(t, line) for t, stream, line in served.lines if stream == "stderr" and "warm-up" in line]
    assert any("BM25 index docs_chunks" in line for _, line in warm) and any("embedder" in line for _, line in warm)
    assert all(t <= ready[0][0] for t, _ in warm)  # the warm-up is done before the line
    assert httpx.get(served.url + "/api/strategies", timeout=5).status_code == 200


def test_defaults_f_with_descriptions(page, served):
    assert page.is_checked("#st-F") and not page.is_checked("#st-B")
    assert REFERENCE_CHUNK.splitlines()[0] in page.input_value("#chunk")
    for s in "ABCDEF":
        desc = page.text_content(f"label[for=st-{s}] .sd")
        assert len(desc) > 8, f"strategy {s} has no description"
    assert "recommended" in page.text_content("label[for=st-F]")
    assert "cannot run here" in page.text_content("label[for=st-E]")  # the fixture server has no LLM
    import httpx

    meta = httpx.get(served.url + "/api/strategies").json()
    assert meta["unavailable"]["E"]["enable"].startswith("godot-rag serve --llm-bundled 0.5b")
    assert meta["unavailable"]["F"] is None and meta["rerankers"]["none"] is None and meta["rerankers"]["qwen"]
    assert page.locator("#wi-reranker option[value=qwen]").is_disabled()


def test_journey_matrix_fits_at_1366x768(page, served):
    page.evaluate("""() => { window.__sawDisabled = false;
      new MutationObserver(() => { if (document.querySelector('#run').disabled) window.__sawDisabled = true; })
        .observe(document.querySelector('#run'), { attributes: true }); }""")
    page.click("#run")  # F, the default
    _wait_done(page)
    assert page.evaluate("window.__sawDisabled"), "Run was not disabled while the request was in flight"
    assert page.get_attribute("body", "data-state") == "done"
    # the columns are F's own stages, in order, from the strategy table
    import httpx

    # (the page's schema: each stage's `column`, the same list the page reads)
    f_stages = httpx.get(served.url + "/api/strategies").json()["stage_lists"]["F"]["stages"]
    shown = page.eval_on_selector_all("#matrix thead th[data-stage]", "ths => ths.map(t => t.dataset.stage)")
    assert shown == [s["name"] for s in f_stages if s["column"]]
    assert {"codematch", "merge", "rerank", "validate", "cut"} <= set(shown)
    labels = page.eval_on_selector_all("#matrix thead th[data-stage] .sn", "ss => ss.map(s => s.textContent)")
    assert labels == [s["column"]["label"] for s in f_stages if s["column"]]
    # one screen: the chunk, the stage header and the first 10 rows of every column, no horizontal scrolling
    assert _inside_viewport(page.locator("#chunk").bounding_box())
    assert _inside_viewport(page.locator("#matrix thead tr").bounding_box())
    rows = page.locator("#matrix tr.row")
    assert rows.count() >= 10
    for i in range(10):
        assert _inside_viewport(rows.nth(i).bounding_box()), f"row {i + 1} is off-screen"
    assert page.evaluate("document.scrollingElement.scrollWidth") <= W
    assert page.evaluate("(() => { const m = document.querySelector('#matrix-wrap'); return m.scrollWidth <= m.clientWidth; })()")
    # the code-clone bonus and the segment merge are columns with values
    assert "%" in _cell(page, "getting_started/demo/coding_the_player#000", "codematch").text_content()
    assert _cell(page, "getting_started/demo/coding_the_player#001", "merge").text_content().startswith("#")
    # the 3D page: rejected, with its confidence, in its own row
    assert _cell(page, THREE_D, "cut").text_content() == "rejected"
    assert "0.50" in _cell(page, THREE_D, "validate").text_content()
    assert "Vector3" in _cell(page, THREE_D, "validate").get_attribute("title")
    assert _cell(page, "getting_started/demo/coding_the_player#000", "cut").text_content() == "#1"
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / "matrix.png"))
    _png_ok(OUT / "matrix.png")


def test_detail_panel_pins_on_click_and_hover_never_replaces_it(page):
    _row(page, THREE_D).click()
    detail = page.locator("#detail")
    assert detail.is_visible()
    assert detail.get_attribute("data-key").endswith(THREE_D)
    assert _inside_viewport(detail.bounding_box())
    chips = page.locator("#detail .chip.contra")
    assert chips.count() >= 1 and "Vector3 ≠ Vector2" in chips.first.text_content()
    assert page.locator("#detail .chip.rename", has_text="velocity→direction").count() == 1
    assert page.locator("#detail .align .al.paired").count() >= 8  # the chunk and the record, aligned line by line
    assert page.locator("#detail mark.contra", has_text="Vector3").count() >= 1
    text = page.text_content("#detail")
    assert "sum = fused score" in text and "BM25 terms" in text and "confidence 0.505" in text
    assert "LOST HERE" in text and "Version decisions" in text
    # The guide model's arithmetic: each feature's value, weight and contribution, the logit and P(direct).
    assert "Guide model" in text and "P(direct)" in text and "contribution" in text and "cosine" in text
    assert page.locator("#detail td", has_text="api_code").count() == 1
    for rid in ("getting_started/demo/coding_the_player#000", "classes/class_vector2#001", "classes/class_input#002"):
        _row(page, rid).hover()
        page.mouse.move(400, 250)
    page.wait_for_timeout(150)
    assert detail.get_attribute("data-key").endswith(THREE_D)
    assert THREE_D in page.text_content("#detail .dhead")
    page.screenshot(path=str(OUT / "detail.png"))
    _png_ok(OUT / "detail.png")
    page.click("#detail-close")
    assert not detail.is_visible()
    # A record the learned ranker decided: its arithmetic, each feature's value, weight and contribution.
    _row(page, "getting_started/demo/coding_the_player#000").click()
    text = page.text_content("#detail")
    assert "Learned ranker" in text and "guides: P(direct)" in text and "f_accepts" in text and "contribution" in text
    assert "decided by rule ranker" in text
    page.click("#detail-close")


def test_output_is_the_exact_jsonl_next_to_the_json(page):
    page.click("#tab-output")
    full = json.loads(page.text_content("#json"))
    lines = page.locator("#jsonl .jl")
    assert lines.count() == len(full["results"]) >= 1
    for i, c in enumerate(full["results"]):
        assert json.loads(lines.nth(i).text_content()) == c["payload"]
    assert all(c["verdict"] == "accept" for c in full["results"])
    page.click("#tab-journey")


def test_why_not_names_the_stage(page):
    page.click("#tab-why")
    page.fill("#why-id", "tutorials/demo/signals#000")
    page.click("#why-go")
    verdict = page.text_content("#why-out .verdict")
    # the validator's own reason: the guide model's arithmetic (P(direct) below its threshold)
    threshold = json.loads(SHIPPED.read_text())["threshold"]  # the shipped model's
    # then the learned ranker's, which decides last and names the feature that kept it out
    assert verdict.startswith("Lost at rank") and f" < {threshold:.2f}" in verdict and "P(direct) 0." in verdict, verdict
    assert "ranker: P(direct)" in verdict and "kept out most by" in verdict, verdict
    lost_row = page.locator("#why-out tr.lost")
    assert lost_row.count() == 1 and lost_row.locator("td").first.text_content() == "rank"
    assert page.locator("#why-out tr", has_text="bm25").locator("td").nth(2).text_content() == "#10"
    page.fill("#why-id", "getting_started/demo/coding_the_player#000")
    page.click("#why-go")
    assert page.text_content("#why-out .verdict").startswith("Not lost: returned at #1")
    page.fill("#why-id", "classes/no_such_page#000")
    page.click("#why-go")
    assert "no stage saw it" in page.text_content("#why-out .verdict")
    page.fill("#why-id", "")
    page.select_option("#why-page", "classes/class_vector3")
    assert page.locator("#why-out .why-card").count() == 2  # both records of the page
    page.click("#tab-journey")


def test_what_if_rerun_shows_rank_deltas(page):
    _run(page, "F")
    # The learned ranker keeps these entries out on the tiny fixture corpus; F's rules alone accept them.
    assert "rej" in _cell(page, "classes/class_vector2#001", "rank").text_content()
    page.uncheck("#wi-learned_ranker")  # re-runs at once
    page.wait_for_function("document.querySelector('#strip').textContent.includes('learned_ranker=false')", timeout=60_000)
    _wait_done(page)
    assert _cell(page, "classes/class_vector2#001", "cut").text_content() == "#3"
    assert _cell(page, "classes/class_input#002", "cut").text_content() == "#4"
    page.uncheck("#wi-segments")  # re-runs at once
    page.wait_for_function("document.querySelector('#strip').textContent.includes('segments=false')", timeout=60_000)
    _wait_done(page)
    assert _cell(page, "classes/class_vector2#001", "cut").text_content() == "#4"
    delta = _row(page, "classes/class_vector2#001").locator("td.delta")
    assert delta.text_content() == "▼1" and delta.get_attribute("data-delta") == "-1"
    assert _row(page, "classes/class_input#002").locator("td.delta").text_content() == "▲1"
    assert "off" in page.text_content("#matrix thead th[data-stage=merge]")  # no segments, no merge
    page.click("#wi-reset")
    page.wait_for_function("document.querySelector('#strip').textContent.includes('→ defaults')", timeout=60_000)
    _wait_done(page)
    assert "rej" in _cell(page, "classes/class_vector2#001", "rank").text_content()


def test_keyboard_only(page, served):
    page.goto(served.url + "/")
    page.wait_for_function("document.body.dataset.state === 'ready'")
    active = "document.activeElement && (document.activeElement.id || document.activeElement.tagName)"
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate(active) == "run":
            break
    assert page.evaluate(active) == "run", "Tab never reached Run"
    page.keyboard.press("Enter")
    _wait_done(page)
    assert page.evaluate(active) == "run"  # the focus stays on Run after the run
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.matches('#matrix tr.row')"):
            break
    first = page.evaluate("document.activeElement.dataset.key")
    assert first, "Tab never reached a matrix row"
    page.keyboard.press("ArrowDown")
    second = page.evaluate("document.activeElement.dataset.key")
    assert second and second != first
    page.keyboard.press("Enter")
    assert page.locator("#detail").is_visible() and page.get_attribute("#detail", "data-key") == second
    for _ in range(6):
        page.keyboard.press("Tab")
        if page.evaluate("document.querySelector('#detail').contains(document.activeElement)"):
            break
    assert page.evaluate("document.querySelector('#detail').contains(document.activeElement)"), \
        "Tab never reached the detail panel"
    page.keyboard.press("Escape")
    assert not page.locator("#detail").is_visible()


def test_compare_all_strategies_with_eval_gold(page):
    gold = {"id": "fixture:reference", "chunk_text": REFERENCE_CHUNK,
            "relevant_pages": {"getting_started/demo/coding_the_player": 2},
            "demoted_pages": ["tutorials/demo3d/player_movement"]}
    page.click("#gold-box summary")
    page.fill("#eval-line", json.dumps(gold))
    page.click("#eval-use")
    assert "1 relevant, 1 demoted" in page.text_content("#gold-chip")
    page.click("#compare-btn")
    _wait_done(page, 120_000)
    tables = page.locator("table.cmp")
    assert tables.count() == 3
    heads = tables.first.locator("tr").first.locator("th.strat")
    assert [heads.nth(i).locator(".sl").text_content() for i in range(heads.count())] == list("ABCDEF")
    e_head = heads.nth(4).text_content()
    assert "cannot run" in e_head and "godot-rag serve --llm-bundled 0.5b" in e_head
    docs = tables.first
    row3d = docs.locator("tr", has=page.locator("td.rec", has_text=THREE_D))
    assert row3d.locator("td").nth(6).text_content() == "rejected"  # F
    assert "demoted page accepted" in row3d.locator("td").nth(2).text_content()  # B returns it: it must stand out
    assert row3d.locator("td.wrong").count() >= 1
    rel = docs.locator("tr", has=page.locator("td.rec", has_text="getting_started/demo/coding_the_player#000"))
    assert "★" in rel.locator("td.rec").text_content() and rel.locator("td").nth(6).text_content() == "#1"
    # mappings and labels show where they were lost, never a bare dash
    maps = tables.nth(1)
    f_cells = maps.locator("tr").locator("td:nth-child(7)")
    assert f_cells.count() >= 1 and all(f_cells.nth(i).text_content() in ("rejected",)
                                        or f_cells.nth(i).text_content().startswith(("#", "✕", "cut"))
                                        for i in range(f_cells.count()))
    page.screenshot(path=str(OUT / "compare.png"))
    _png_ok(OUT / "compare.png")
    page.click("#eval-clear")


def test_unavailable_strategy_says_how_to_enable_it(page):
    page.check("#st-E")
    page.click("#run")
    box = page.locator("#matrix .errbox")
    assert box.is_visible()
    assert "this server was started without an LLM" in box.text_content()
    assert page.text_content("#matrix .errbox code.cmd").startswith("godot-rag serve --llm-bundled 0.5b")
    assert "pass" not in page.text_content("#status").lower()  # no "pass server flags" to a browser user
    page.check("#st-F")


def test_error_clears_the_previous_results(page):
    _run(page, "F", REFERENCE_CHUNK)
    assert page.locator("#matrix tr.row").count() > 0
    _run(page, "F", "x" * 20001)
    assert page.get_attribute("body", "data-state") == "error"
    assert "413" in page.text_content("#status")
    assert page.locator("#matrix tr.row").count() == 0 and page.text_content("#json") == ""
    assert "413" in page.text_content("#matrix .errbox")


def test_hostile_text_stays_text(page, served):
    hostile = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
               '\nfunc _ready():\n\tvar velocity = Vector2.ZERO')
    _run(page, "F", hostile)
    assert page.evaluate("window.__pwned") is None
    page.locator("#matrix tr.row").first.click()
    assert "<script>window.__pwned = 1</script>" in page.text_content("#detail .align")
    page.click("#tab-output")
    assert "<script>window.__pwned = 1</script>" in page.text_content("#json")
    page.click("#tab-journey")
    assert page.locator("#main img").count() == 0 and page.locator("#main script").count() == 0
    page.click("#gold-box summary") if not page.is_visible("#eval-line") else None
    page.fill("#eval-line", json.dumps({"id": "<img src=x onerror=window.__pwned=3>", "chunk_text": hostile}))
    page.click("#eval-use")
    assert page.evaluate("window.__pwned") is None and page.locator("#left img").count() == 0
    page.click("#eval-clear")
    import httpx

    for name in ("app.js", "journey.js", "detail.js", "compare.js", "dom.js"):
        text = httpx.get(f"{served.url}/static/{name}").text
        assert "innerHTML" not in text and "insertAdjacentHTML" not in text and "outerHTML" not in text, name


def test_scan_handoff_opens_the_chunk_and_runs_f(browser, served):
    chunk = "func _on_body_entered(body):\n\tvar velocity = Vector2.ZERO\n\tposition += velocity"
    pg = browser.new_page(viewport={"width": W, "height": H})
    try:
        pg.route("**/scan", lambda route: route.fulfill(status=200, content_type="text/html", body="<p>scan</p>"))
        pg.goto(served.url + "/?chunk=" + urllib.parse.quote(chunk))
        _wait_done(pg)
        assert pg.input_value("#chunk") == chunk and pg.is_checked("#st-F")
        assert pg.get_attribute("body", "data-state") == "done" and pg.locator("#matrix tr.row").count() > 0
        pg.wait_for_selector("#scan-link:not([hidden])", timeout=5_000)
        # a long chunk comes through sessionStorage, with the scan's file and line range
        long_chunk = chunk + "\n" + "\n".join(f"\tprint({i})" for i in range(40))
        pg.evaluate("([c]) => { sessionStorage.setItem('godot-rag.chunk', c); sessionStorage.setItem('godot-rag.chunk.meta', "
                    "JSON.stringify({file: 'player.gd', start_line: 3, end_line: 45, job_id: 'j1'})); }", [long_chunk])
        pg.goto(served.url + "/?from=scan")
        _wait_done(pg)
        assert pg.input_value("#chunk") == long_chunk
        assert "player.gd:3-45" in pg.text_content("#origin")
        assert pg.evaluate("sessionStorage.getItem('godot-rag.chunk')") is None
    finally:
        pg.close()
