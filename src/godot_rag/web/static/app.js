// godot-rag debugger: the journey of every record through one strategy's stages, for one chunk.
// Renders exactly the JSON of POST /api/retrieve. Every piece of chunk or record text is inserted as text
// (textContent, text nodes): nothing from the server or the user is parsed as HTML.
import { $, el, num, short, chip, download, pageOf } from "./dom.js";
import { TABLES, key, buildJourney, outcomeText, whyNot, recordsOfPage, unseenReason, deltas } from "./journey.js";
import { renderRecord, renderStage } from "./detail.js";
import { renderCompare } from "./compare.js";

const STRATS = ["A", "B", "C", "D", "E", "F"];
const ROWS_SHOWN = 30;  // per table until "show all"
const CHUNK_KEY = "godot-rag.chunk", CHUNK_META_KEY = "godot-rag.chunk.meta";

const state = {
  meta: null, defaults: {}, examples: [], strategy: "F",
  journey: null, last: null, deltas: null, changedSettings: "",
  pinned: null, focusKey: null, expanded: new Set(),
  compareRuns: null, gold: null, inFlight: false, pending: null, extends: null, seq: 0,
};

// ---------------------------------------------------------------- status
function setStatus(msg, cls) { const s = $("status"); s.textContent = msg; s.className = cls || "note"; }
function setBusy(busy) {
  state.inFlight = busy;
  if (busy) document.body.dataset.state = "running";
  $("run").disabled = busy;
  $("compare-btn").disabled = busy;
  $("run").textContent = busy ? "Running…" : "Run";
}

// ---------------------------------------------------------------- gold (an eval line)
const gold = {
  active: () => !!state.gold,
  pages: () => state.gold ? [...Object.keys(state.gold.relevant_pages || {}), ...(state.gold.demoted_pages || [])] : [],
  mappingIds: () => state.gold ? (state.gold.relevant_mappings || []).map((m) => `${m[0]}:${m[1]}->${m[2]}`) : [],
  mark(rec) {
    if (!state.gold || !rec) return null;
    if (rec.table === "docs_chunks") {
      const page = rec.page || pageOf(rec.id);
      const rel = (state.gold.relevant_pages || {})[page];
      if (rel != null) return { cls: "relevant", icon: "★", text: `★ relevant page (grade ${rel})` };
      if ((state.gold.demoted_pages || []).includes(page)) return { cls: "demoted", icon: "⚠", text: "⚠ demoted page: must not be accepted" };
    }
    if (rec.table === "api_mapping" && gold.mappingIds().includes(rec.id)) return { cls: "relevant", icon: "★", text: "★ relevant mapping" };
    return null;
  },
};

function useGold(obj) {
  const text = obj.chunk_text ?? obj.chunkText;
  if (typeof text !== "string") throw new Error("the line has no chunk_text");
  state.gold = { id: obj.id || "eval line", relevant_pages: obj.relevant_pages || {}, demoted_pages: obj.demoted_pages || [],
    relevant_mappings: obj.relevant_mappings || [] };
  $("chunk").value = text;
  $("gold-chip").textContent = `· ${state.gold.id}: ${Object.keys(state.gold.relevant_pages).length} relevant, ${state.gold.demoted_pages.length} demoted`;
}

// ---------------------------------------------------------------- init
async function init() {
  const [meta, ex] = await Promise.all([
    fetch("/api/strategies").then((r) => r.json()).catch((e) => ({ error: String(e) })),
    fetch("/api/examples").then((r) => r.json()).catch(() => ({ examples: [] })),
  ]);
  if (meta.error) setStatus("could not load the strategies: " + meta.error, "error");
  state.meta = meta;
  state.defaults = meta.settings || {};
  buildStrategies();
  buildWhatIf();
  state.examples = ex.examples || [];
  state.examples.forEach((e, i) => $("example").append(el("option", { value: String(i), text: e.name })));
  if (state.examples.length) { $("chunk").value = state.examples[0].chunkText; $("example").value = "0"; }
  wire();
  showView("journey");
  probeScan();
  const incoming = incomingChunk();
  if (incoming) {
    $("chunk").value = incoming.chunk;
    $("example").value = "";
    run({ fresh: true });
  } else {
    document.body.dataset.state = "ready";
  }
}

function buildStrategies() {
  const box = $("strategies");
  const un = (state.meta && state.meta.unavailable) || {};
  const about = (state.meta && state.meta.strategies) || {};
  for (const s of STRATS) {
    const input = el("input", { type: "radio", name: "strategy", value: s, id: "st-" + s });
    if (s === state.strategy) input.checked = true;
    input.addEventListener("change", () => { if (input.checked) state.strategy = s; });
    const desc = (about[s] || "") + (un[s] ? ` — cannot run here: ${un[s].reason}` : "");
    input.addEventListener("change", () => { if (input.checked) $("strat-about").textContent = `${s}: ${desc}`; });
    box.append(el("label", { class: "strat" + (un[s] ? " unavail" : ""), title: desc, for: "st-" + s }, input,
      el("b", { text: s }), el("span", { class: "sd", text: desc })));
  }
  box.append(el("div", { id: "strat-about", class: "strat-about", "aria-live": "polite",
    text: `${state.strategy}: ${about[state.strategy] || ""}` }));
}

function buildWhatIf() {
  const rr = (state.meta && state.meta.rerankers) || { none: null, nanoranker: null };
  const sel = $("wi-reranker");
  for (const [name, why] of Object.entries(rr)) {
    sel.append(el("option", { value: name, disabled: !!why, title: why ? `${why.reason}: ${why.enable}` : "", text: why ? `${name} (unavailable)` : name }));
  }
  resetWhatIf();
}

function resetWhatIf() {
  for (const input of document.querySelectorAll("#whatif [data-setting]")) {
    const v = state.defaults[input.dataset.setting];
    if (input.type === "checkbox") input.checked = !!v;
    else if (v != null) input.value = String(v);
  }
}

function settings() {
  const out = {};
  for (const input of document.querySelectorAll("#whatif [data-setting]")) {
    const name = input.dataset.setting;
    let v = input.type === "checkbox" ? input.checked : input.type === "number" ? Number(input.value) : input.value;
    if (input.type === "number" && (input.value === "" || Number.isNaN(v))) continue;
    if (v !== state.defaults[name]) out[name] = v;
  }
  return out;
}

function describeSettings(cfg) {
  const parts = Object.entries(cfg).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(", ") : "defaults";
}

async function probeScan() {
  try {
    const r = await fetch("/scan", { headers: { Accept: "text/html" } });
    if (r.ok) $("scan-link").hidden = false;
  } catch (e) { /* no scan page on this server */ }
}

function incomingChunk() {
  const q = new URLSearchParams(location.search);
  let chunk = q.get("chunk");
  let meta = null;
  try {
    const stored = sessionStorage.getItem(CHUNK_KEY);
    if (chunk == null && stored) chunk = stored;
    meta = JSON.parse(sessionStorage.getItem(CHUNK_META_KEY) || "null");
    sessionStorage.removeItem(CHUNK_KEY);
    sessionStorage.removeItem(CHUNK_META_KEY);
  } catch (e) { /* storage off */ }
  if (!chunk) return null;
  const strategy = (q.get("strategy") || (meta && meta.strategy) || "F").toUpperCase();
  state.strategy = STRATS.includes(strategy) ? strategy : "F";
  const radio = $("st-" + state.strategy);
  if (radio) { radio.checked = true; radio.dispatchEvent(new Event("change")); }
  if (meta) {
    if (meta.godot_version === "3" || meta.godot_version === "4") $("wi-godot_version").value = meta.godot_version;
    if (meta.extends && /^[A-Za-z_][A-Za-z0-9_]*$/.test(meta.extends)) state.extends = meta.extends;
    const o = $("origin");
    o.hidden = false;
    o.replaceChildren("from the scan: ", el("code", { text: `${meta.file || "?"}:${meta.start_line ?? "?"}-${meta.end_line ?? "?"}` }), " ",
      meta.job_id ? el("a", { href: "/scan?job=" + encodeURIComponent(meta.job_id), text: "back to the scan" }) : null);
  }
  return { chunk, meta };
}

// ---------------------------------------------------------------- events
function wire() {
  $("example").addEventListener("change", () => {
    const e = state.examples[Number($("example").value)];
    if (e) $("chunk").value = e.chunkText;
  });
  $("file").addEventListener("change", async () => {
    const f = $("file").files[0];
    if (f) { $("chunk").value = await f.text(); $("example").value = ""; }
  });
  $("eval-file").addEventListener("change", async () => {
    const f = $("eval-file").files[0];
    if (!f) return;
    const lines = (await f.text()).split("\n").filter((l) => l.trim());
    const pick = $("eval-pick");
    pick.replaceChildren(el("option", { value: "", text: `— ${lines.length} queries —` }));
    state.evalLines = lines.slice(0, 2000);
    state.evalLines.forEach((l, i) => {
      let id = "line " + (i + 1);
      try { id = JSON.parse(l).id || id; } catch (e) { /* shown by its number */ }
      pick.append(el("option", { value: String(i), text: id }));
    });
    pick.hidden = false;
  });
  $("eval-pick").addEventListener("change", () => {
    const i = $("eval-pick").value;
    if (i === "") return;
    try { useGold(JSON.parse(state.evalLines[Number(i)])); setStatus("eval line loaded: press Run or Compare"); } catch (e) { setStatus("not a JSON line: " + e.message, "error"); }
  });
  $("eval-use").addEventListener("click", () => {
    try { useGold(JSON.parse($("eval-line").value)); setStatus("eval line loaded: press Run or Compare"); } catch (e) { setStatus("not an eval JSON line: " + e.message, "error"); }
  });
  $("eval-clear").addEventListener("click", () => { state.gold = null; $("gold-chip").textContent = ""; rerender(); });
  $("run").addEventListener("click", () => run({ fresh: true }));
  $("compare-btn").addEventListener("click", () => compare());
  $("download").addEventListener("click", () => download("godot-rag-result.json", $("json").textContent));
  $("dl-jsonl").addEventListener("click", () => download("godot-rag-records.jsonl", state.jsonl || "", "application/x-ndjson"));
  for (const b of document.querySelectorAll("#tabs [role=tab]")) b.addEventListener("click", () => showView(b.dataset.view));
  $("tabs").addEventListener("keydown", (e) => {
    if (e.key !== "ArrowRight" && e.key !== "ArrowLeft") return;
    const tabs = [...document.querySelectorAll("#tabs [role=tab]")];
    const i = tabs.indexOf(document.activeElement);
    const next = tabs[(i + (e.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
    next.focus(); showView(next.dataset.view);
  });
  let timer = null;
  for (const input of document.querySelectorAll("#whatif [data-setting]")) {
    input.addEventListener("change", () => { clearTimeout(timer); timer = setTimeout(() => run({ fresh: false }), input.type === "number" ? 150 : 0); });
  }
  $("wi-reset").addEventListener("click", () => { resetWhatIf(); run({ fresh: false }); });
  $("detail-close").addEventListener("click", closeDetail);
  $("detail").addEventListener("keydown", (e) => { if (e.key === "Escape") { closeDetail(); } });
  $("why-go").addEventListener("click", explainWhy);
  $("why-id").addEventListener("keydown", (e) => { if (e.key === "Enter") explainWhy(); });
  $("why-page").addEventListener("change", () => { if ($("why-page").value) { $("why-id").value = ""; explainWhy(); } });
  document.addEventListener("keydown", (e) => {
    if ((e.ctrlKey || e.metaKey) && e.key === "Enter") { e.preventDefault(); run({ fresh: true }); }
  });
}

function showView(view) {
  for (const b of document.querySelectorAll("#tabs [role=tab]")) {
    const on = b.dataset.view === view;
    b.setAttribute("aria-selected", on ? "true" : "false");
    b.tabIndex = on ? 0 : -1;
  }
  for (const v of ["journey", "why", "compare", "output"]) $("view-" + v).hidden = v !== view;
  state.view = view;
}

// ---------------------------------------------------------------- requests
async function retrieve(strategy, chunk, cfg) {
  const body = { chunkText: chunk, strategy, k: Number($("k").value) || 10, explain: true };
  if (Object.keys(cfg).length) body.config = cfg;
  if (state.extends) body.extends = state.extends;
  const resp = await fetch("/api/retrieve", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const data = await resp.json().catch(() => ({ error: "the server's answer was not JSON" }));
  if (!resp.ok) throw new Error(`${resp.status}: ${data.error || (data.detail && JSON.stringify(data.detail)) || "error"}`);
  return data;
}

function unavailable(strategy) {
  const un = (state.meta && state.meta.unavailable) || {};
  return un[strategy] || null;
}

function unavailableBox(strategy, why) {
  return el("div", { class: "errbox" }, el("p", { text: `Strategy ${strategy} cannot run on this server: ${why.reason}.` }),
    el("p", { text: "Whoever runs the server can enable it by starting it with:" }), el("code", { class: "cmd", text: why.enable }),
    el("p", { class: "muted", text: "Meanwhile, F (the recommended strategy) runs without it." }));
}

function clearResults(message) {
  state.journey = null;
  state.deltas = null;
  $("matrix").replaceChildren(el("p", { class: "empty-msg", text: message }));
  $("strip").replaceChildren();
  $("jsonl").replaceChildren();
  state.jsonl = "";
  $("json").textContent = "";
  $("jsonl-note").textContent = "";
  $("why-out").replaceChildren();
}

/** Run the chosen strategy. fresh: a new chunk (the Run button); otherwise a what-if re-run of the same chunk. */
async function run({ fresh }) {
  if (state.inFlight) { state.pending = { fresh: fresh || (state.pending && state.pending.fresh) }; return; }
  const chunk = $("chunk").value;
  const strategy = state.strategy;
  if (!chunk.trim()) { setStatus("the chunk is empty: paste GDScript first", "error"); document.body.dataset.state = "error"; return; }
  const cfg = settings();
  const previous = state.last && state.last.chunk === chunk && state.last.strategy === strategy && !fresh ? state.last : null;
  if (fresh || !previous) closeDetail();
  if (fresh) showView("journey");
  clearResults(`running ${strategy}…`);
  state.compareRuns = null;
  $("compare").replaceChildren(el("p", { class: "empty-msg", text: "Compare A–F runs every strategy on the chunk." }));
  const why = unavailable(strategy);
  if (why) {
    $("matrix").replaceChildren(unavailableBox(strategy, why));
    setStatus(`${strategy} cannot run on this server (${why.reason})`, "error");
    document.body.dataset.state = "error";
    return;
  }
  const refocus = document.activeElement === $("run");
  setBusy(true);
  setStatus(`running ${strategy}…`);
  const seq = ++state.seq;
  try {
    const result = await retrieve(strategy, chunk, cfg);
    if (seq !== state.seq) return;
    show(result, previous, cfg);
    document.body.dataset.state = "done";
  } catch (e) {
    const msg = String(e.message || e);
    $("matrix").replaceChildren(el("div", { class: "errbox" }, el("p", { text: `${strategy} failed: ${msg}` })));
    setStatus(`${strategy}: ${msg}`, "error");
    document.body.dataset.state = "error";
    state.last = null;
  } finally {
    setBusy(false);
    // a disabled button loses the focus: give it back, so the keyboard user stays where they were
    if (refocus && (document.activeElement === document.body || document.activeElement == null)) $("run").focus();
    if (state.pending) { const p = state.pending; state.pending = null; run(p); }
  }
}

function show(result, previous, cfg) {
  const journey = buildJourney(result, state.meta && state.meta.stage_lists);
  state.journey = journey;
  state.deltas = previous ? deltas(journey, previous.journey) : null;
  state.changedSettings = previous ? `${describeSettings(previous.cfg)} → ${describeSettings(cfg)}` : "";
  state.last = { chunk: result.chunk_text, strategy: result.strategy, journey, cfg };
  const counts = { returned: 0, rejected: 0, cut: 0 };
  journey.records.forEach((r) => { if (counts[r.outcome] != null) counts[r.outcome]++; });
  const t = result.trace || {};
  setStatus(`${result.strategy}: ${counts.returned} returned · ${counts.cut} cut at k · ${counts.rejected} rejected · ${journey.records.length} records seen · ${num(t.total_ms, 0)} ms` +
    (t.llm_fallback ? ` · ${t.llm_fallback}` : ""), counts.returned ? "note" : "warn");
  rerender();
}

function rerender() {
  if (!state.journey) return;
  renderStrip(state.journey);
  renderMatrix(state.journey);
  renderOutput(state.journey.result);
  fillWhy(state.journey);
  if (state.compareRuns) renderCompareView();
  if (state.pinned) openDetail(state.pinned, false);
}

// ---------------------------------------------------------------- stage strip + matrix
function renderStrip(journey) {
  const strip = $("strip");
  strip.replaceChildren();
  for (const st of journey.stages) {
    const skipped = st.info && st.info.skipped;
    strip.append(el("button", { type: "button", class: "sc" + (st.record ? " rec" : " q") + (skipped ? " off" : ""), title: `${st.name}: ${st.about}` + (skipped ? ` (${skipped})` : ""),
      onclick: () => openDetail({ kind: "stage", name: st.name }, true) }, st.name, el("small", { text: st.ms != null ? " " + num(st.ms, 0) : "" })));
  }
  // one tab stop for the whole strip; the arrows move along it
  const chips = [...strip.querySelectorAll("button.sc")];
  chips.forEach((b, i) => {
    b.tabIndex = i === 0 ? 0 : -1;
    b.addEventListener("keydown", (e) => {
      const j = e.key === "ArrowRight" ? i + 1 : e.key === "ArrowLeft" ? i - 1 : null;
      if (j == null || j < 0 || j >= chips.length) return;
      e.preventDefault(); b.tabIndex = -1; chips[j].tabIndex = 0; chips[j].focus();
    });
  });
  const t = journey.result.trace || {};
  const facts = [];
  if (t.version) facts.push(`version: lean ${t.version.lean ?? "none"} (hint ${t.version.hint})`);
  if (t.resolve) facts.push(`resolve: ${(t.resolve.uses || []).length} uses`);
  if (t.segments) facts.push(`${t.segments.length} segments`);
  if (state.deltas) facts.push(`Δ vs previous run: ${state.changedSettings}`);
  strip.append(el("span", { class: "facts", text: facts.join(" · ") }));
}

const NARROW = new Set(["union", "shortlist", "api"]);

function renderMatrix(journey) {
  const cols = journey.columns;
  const tbl = el("table", { class: "mx", role: "grid", "aria-label": `journey of every record through strategy ${journey.strategy}` });
  const cg = el("colgroup", {}, el("col", { class: "c-lab" }));
  cols.forEach((c) => cg.append(el("col", { class: c.off ? "c-off" : NARROW.has(c.name) ? "c-narrow" : "c-st" })));
  cg.append(el("col", { class: "c-delta" }));
  tbl.append(cg);
  const hr = el("tr", {}, el("th", { class: "lab", scope: "col", text: `record (${journey.records.length})` }));
  for (const c of cols) {
    const label = c.column.label;
    hr.append(el("th", { scope: "col", class: "st" + (c.off ? " off" : ""), title: `${c.name}: ${c.about}` + (c.off ? " (off for this run)" : "") + (c.ms != null ? ` · ${c.ms} ms` : ""), dataset: { stage: c.name } },
      el("span", { class: "sn", text: label }), el("small", { text: c.off ? "off" : subtitle(c) })));
  }
  hr.append(el("th", { scope: "col", class: "st", title: state.deltas ? "final rank against the previous run: " + state.changedSettings : "rank change against the previous run (what-if)" }, el("span", { class: "sn", text: "Δ" }), el("small", { text: "prev" })));
  tbl.append(el("thead", {}, hr));
  for (const table of journey.tables) {
    const recs = journey.records.filter((r) => r.table === table);
    const tb = el("tbody", { dataset: { table } });
    const counts = {};
    recs.forEach((r) => { counts[r.outcome] = (counts[r.outcome] || 0) + 1; });
    const summary = [`${recs.length} seen`, counts.returned ? `${counts.returned} returned` : "0 returned", counts.cut ? `${counts.cut} cut at k` : null,
      counts.rejected ? `${counts.rejected} rejected` : null, counts.lost ? `${counts.lost} lost before the validator` : null].filter(Boolean).join(" · ");
    tb.append(el("tr", { class: "tgroup" }, el("th", { colspan: String(cols.length + 2) }, el("b", { text: table }), " ", el("span", { class: "muted", text: summary }))));
    const expanded = state.expanded.has(table);
    const needed = new Set([state.pinned && state.pinned.kind === "record" ? state.pinned.key : null, state.focusKey]);
    recs.forEach((rec, i) => {
      if (!expanded && i >= ROWS_SHOWN && !needed.has(key(rec.table, rec.id))) return;
      tb.append(row(rec, cols));
    });
    if (!recs.length) tb.append(el("tr", { class: "none" }, el("td", { colspan: String(cols.length + 2), class: "muted", text: "no candidates" })));
    if (recs.length > ROWS_SHOWN) {
      tb.append(el("tr", { class: "more" }, el("td", { colspan: String(cols.length + 2) },
        el("button", { type: "button", onclick: () => { if (expanded) state.expanded.delete(table); else state.expanded.add(table); renderMatrix(journey); },
          text: expanded ? `show the first ${ROWS_SHOWN}` : `show all ${recs.length} ${table} records` }))));
    }
    tbl.append(tb);
  }
  $("matrix").replaceChildren(tbl);
  const rows = [...tbl.querySelectorAll("tr.row")];
  const focus = rows.find((r) => r.dataset.key === state.focusKey) || rows[0];
  if (focus) focus.tabIndex = 0;
}

function subtitle(c) {
  // The column's unit from the schema; `{name}` is a field of the stage's log, and a missing one leaves it blank.
  const info = c.info || {};
  let missing = false;
  const text = c.column.unit.replace(/\{(\w+)\}/g, (_, name) => { if (info[name] == null) missing = true; return info[name] ?? ""; });
  return missing ? "" : text;
}

function row(rec, cols) {
  const k = key(rec.table, rec.id);
  const gm = gold.mark(rec);
  const tr = el("tr", { class: `row o-${rec.outcome}` + (gm ? " g-" + gm.cls : "") + (state.pinned && state.pinned.key === k ? " sel" : ""),
    tabindex: "-1", "aria-selected": state.pinned && state.pinned.key === k ? "true" : "false", dataset: { key: k, id: rec.id, table: rec.table } });
  const p = rec.payload || {};
  const title = rec.id + (p.section_path ? "\n" + p.section_path.join(" / ") : "") + "\n" + (rec.outcome === "returned" ? `returned at #${rec.finalRank}` : rec.reason || "");
  tr.append(el("th", { class: "lab", scope: "row", title }, el("div", { class: "labw" },
    gm ? el("span", { class: "gm " + gm.cls, text: gm.icon }) : null,
    rec.group === "api_reference" ? el("span", { class: "grp", text: "API", title: "api_reference group: the member entry of an API use" }) : null,
    ...idParts(rec))));
  const d = state.deltas ? state.deltas.get(k) : null;
  for (const c of cols) tr.append(cell(rec, c, d));
  const dc = el("td", { class: "delta" });
  if (d) {
    if (d.oldOutcome === "unseen") { dc.textContent = "new"; dc.className += " up"; dc.title = "not seen by the previous run"; }
    else if (rec.outcome === "returned" && d.old != null && d.move) { dc.textContent = (d.move > 0 ? "▲" : "▼") + Math.abs(d.move); dc.className += d.move > 0 ? " up" : " down"; dc.title = `was #${d.old}, now #${rec.finalRank}`; dc.dataset.delta = String(d.move); }
    else if (rec.outcome === "returned" && d.old == null) { dc.textContent = "in"; dc.className += " up"; dc.title = `was ${d.oldOutcome}, now returned at #${rec.finalRank}`; }
    else if (rec.outcome !== "returned" && d.oldOutcome === "returned") { dc.textContent = "out"; dc.className += " down"; dc.title = `was returned at #${d.old}, now ${outcomeText(rec)}`; }
    else if (d.changed.size) { dc.textContent = "~"; dc.title = "ranks changed at: " + [...d.changed].join(", "); }
  }
  tr.append(dc);
  tr.addEventListener("click", () => { focusRow(tr, false); pin(k); });
  tr.addEventListener("keydown", rowKeys);
  return tr;
}

function idParts(rec) {  // the page may be cut short on the left; the record's own suffix always shows
  const i = rec.table === "docs_chunks" ? rec.id.lastIndexOf("#") : rec.id.indexOf(":") + 1;
  if (i <= 0) return [el("span", { class: "rid" }, el("span", { class: "rp", text: rec.id }))];
  return [el("span", { class: "rid" + (rec.table === "docs_chunks" ? "" : " long") }, el("span", { class: "rp", text: rec.id.slice(0, i) }), el("span", { class: "rn", text: rec.id.slice(i) }))];
}

function bar(v, cls) {
  const b = el("div", { class: "bar " + (cls || "") });
  b.style.width = Math.max(2, Math.round(100 * v)) + "%";
  return b;
}

function cell(rec, col, d) {
  const c = rec.cells[col.name] || { present: false };
  const td = el("td", { class: "c s-" + col.name, title: c.title || "" });
  if (d && d.changed.has(col.name)) td.classList.add("changed");
  const lostHere = rec.outcome !== "returned" && rec.lost === col.name;
  if (col.off && !c.present) { td.classList.add("off"); return td; }
  if (col.name === "cut") {
    if (rec.outcome === "returned") { td.append(el("b", { class: "fin", text: "#" + rec.finalRank })); td.title = `returned at #${rec.finalRank}` + (rec.group ? ` (${rec.group})` : ""); }
    else { td.append(el("span", { class: "lost o-" + rec.outcome, text: outcomeText(rec) })); td.title = rec.reason || ""; td.classList.add("is-lost"); }
    return td;
  }
  if (!c.present) {
    if (lostHere) {
      td.classList.add("is-lost");
      td.append(el("span", { class: "lost", text: ["validate", "judge", "rank"].includes(col.name) ? "✘ rej" : "✕ lost" }));
      td.title = rec.reason || "";
    }
    else if (rec.lostIndex >= 0 && rec.outcome !== "returned" && rec.lost && colIndexAfter(rec, col)) td.classList.add("after");
    return td;
  }
  if (col.name === "union" || col.name === "api") {
    const src = String(c.badge || "").replace("profile:", "");
    if (!src) { td.append(el("span", { class: "ok", text: "✓" })); return td; }
    td.append(el("span", { class: "badge b-" + (["bm25", "embedding", "both", "api"].includes(src) ? src : "other"), text: src === "embedding" ? "emb" : src }));
    return td;
  }
  if (col.name === "shortlist") { td.append(el("span", { class: "ok", text: "✓" })); td.title = `kept: #${c.rank}`; return td; }
  if (["validate", "judge", "rank"].includes(col.name)) {
    const acc = c.verdict ? c.verdict === "accept" : !lostHere;
    const line = el("div", { class: "cl" }, el("span", { class: acc ? "v-accept" : "v-reject", text: (acc ? "✔" : "✘") + (c.score != null ? " " + Number(c.score).toFixed(2) : "") }));
    if (!acc) { td.classList.add("is-lost"); line.append(el("span", { class: "lost", text: " rej" })); }
    td.append(line);
    if (c.score != null) td.append(bar(c.score, acc ? "g" : "r"));
    if (!c.title) td.title = acc ? "accepted" : rec.reason || "rejected";
    return td;
  }
  const line = el("div", { class: "cl" });
  if (col.name === "score") line.append(el("span", { text: short(c.score) }));
  else if (col.name === "codematch" && c.score != null) line.append(el("span", { text: "#" + c.rank }), el("span", { class: "pct", text: " " + Math.round(c.score * 100) + "%" }));
  else line.append(el("span", { text: (c.segment ? "s" + c.segment + " " : "") + (c.rank != null ? "#" + c.rank : "✓") }));
  if (c.move) line.append(el("span", { class: c.move > 0 ? "up" : "down", text: (c.move > 0 ? " ▲" : " ▼") + Math.abs(c.move), title: "moved at this stage" }));
  td.append(line);
  if (c.bar != null) td.append(bar(c.bar, col.name === "codematch" ? "a" : ""));
  return td;
}

function colIndexAfter(rec, col) {
  const cols = state.journey.columns.map((c) => c.name);
  return cols.indexOf(col.name) > cols.indexOf(rec.lost);
}

// ---------------------------------------------------------------- keyboard + pinning
function visibleRows() { return [...document.querySelectorAll("#matrix tr.row")]; }

function focusRow(tr, focus = true) {
  for (const r of visibleRows()) r.tabIndex = -1;
  tr.tabIndex = 0;
  state.focusKey = tr.dataset.key;
  if (focus) { tr.focus(); tr.scrollIntoView({ block: "nearest" }); }
}

function rowKeys(e) {
  const rows = visibleRows();
  const i = rows.indexOf(e.currentTarget);
  let j = null;
  if (e.key === "ArrowDown") j = Math.min(rows.length - 1, i + 1);
  else if (e.key === "ArrowUp") j = Math.max(0, i - 1);
  else if (e.key === "Home") j = 0;
  else if (e.key === "End") j = rows.length - 1;
  else if (e.key === "PageDown") j = Math.min(rows.length - 1, i + 10);
  else if (e.key === "PageUp") j = Math.max(0, i - 10);
  else if (e.key === "Enter" || e.key === " ") { e.preventDefault(); pin(e.currentTarget.dataset.key); return; }
  else if (e.key === "Escape") { closeDetail(); return; }
  if (j != null) { e.preventDefault(); focusRow(rows[j]); }
}

function pin(k) {
  state.pinned = { kind: "record", key: k };
  for (const r of visibleRows()) {
    const on = r.dataset.key === k;
    r.classList.toggle("sel", on);
    r.setAttribute("aria-selected", on ? "true" : "false");
  }
  openDetail(state.pinned, false);
}

function openDetail(what, showIt) {
  const j = state.journey;
  if (!j) return;
  const body = $("detail-body");
  if (what.kind === "record") {
    const rec = j.byKey.get(what.key);
    if (!rec) { closeDetail(); return; }
    renderRecord(body, rec, j, j.result.chunk_text, gold);
  } else {
    const st = j.stages.find((s) => s.name === what.name);
    if (!st) { closeDetail(); return; }
    renderStage(body, st, j);
  }
  state.pinned = what;
  const d = $("detail");
  d.hidden = false;
  d.dataset.key = what.kind === "record" ? what.key : "stage:" + what.name;
  document.body.classList.add("detail-open");
  if (showIt && state.view !== "journey") showView("journey");
  const tr = what.kind === "record" ? visibleRows().find((r) => r.dataset.key === what.key) : null;
  if (tr) tr.scrollIntoView({ block: "nearest" });
}

function closeDetail() {
  const had = state.pinned;
  const inDetail = $("detail").contains(document.activeElement);
  state.pinned = null;
  $("detail").hidden = true;
  $("detail-body").replaceChildren();
  document.body.classList.remove("detail-open");
  for (const r of visibleRows()) { r.classList.remove("sel"); r.setAttribute("aria-selected", "false"); }
  if (had && had.kind === "record") {
    const tr = visibleRows().find((r) => r.dataset.key === had.key);
    if (tr && inDetail) focusRow(tr);
  }
}

// ---------------------------------------------------------------- why not
function fillWhy(journey) {
  const ids = $("why-ids");
  ids.replaceChildren(...journey.records.map((r) => el("option", { value: r.id })));
  const pages = new Set(journey.records.filter((r) => r.table === "docs_chunks").map((r) => pageOf(r.id)));
  gold.pages().forEach((p) => pages.add(p));
  const sel = $("why-page");
  const keep = sel.value;
  sel.replaceChildren(el("option", { value: "", text: "—" }), ...[...pages].sort().map((p) => el("option", { value: p, text: p })));
  if (pages.has(keep)) sel.value = keep;
}

function explainWhy() {
  const out = $("why-out");
  const j = state.journey;
  if (!j) { out.replaceChildren(el("p", { class: "muted", text: "Run a strategy first." })); return; }
  const id = $("why-id").value.trim();
  const page = $("why-page").value;
  out.replaceChildren();
  let recs = [];
  if (id) recs = TABLES.map((t) => j.byKey.get(key(t, id))).filter(Boolean);
  else if (page) recs = recordsOfPage(j, page);
  else { out.append(el("p", { class: "muted", text: "Type or paste a record id, or pick a page." })); return; }
  if (!recs.length) {
    out.append(el("div", { class: "why-card wc-lost" }, el("h3", { text: id || page }), el("p", { class: "verdict", text: "Lost before the first stage: " + unseenReason(j) + "." }),
      el("p", { class: "muted", text: `Strategy ${j.strategy} saw ${j.records.length} records; this one is not among them` + (id && !id.includes("#") && !id.includes(":") ? " (docs ids look like page#000, mappings like table:from->to)" : "") + "." })));
    return;
  }
  for (const rec of recs) {
    const w = whyNot(j, rec.table, rec.id);
    const verdict = rec.outcome === "returned" ? `Not lost: returned at #${rec.finalRank}` + (rec.group ? ` (${rec.group})` : "") + "."
      : `Lost at ${rec.lost === "cut" ? "the cut at k" : rec.lost}: ${rec.reason}`;
    const rows = w.steps.map((s) => el("tr", { class: s.lost ? "lost" : s.present ? "" : "absent" },
      el("td", { text: s.stage }),
      el("td", { text: s.off ? "off" : s.lost ? "LOST HERE" : s.present ? "reached" : "–" }),
      el("td", { text: s.present && s.rank != null ? "#" + s.rank : "" }),
      el("td", { text: s.present && s.score != null ? num(s.score, 4) : "" }),
      el("td", { text: s.present ? (s.idsOnly ? "rank only" : [s.badge, s.verdict].filter(Boolean).join(" ") + (s.title && !s.badge && !s.verdict ? s.title : "")) : "" })));
    const gm = gold.mark(rec);
    out.append(el("div", { class: "why-card " + (rec.outcome === "returned" ? "wc-ok" : "wc-lost") },
      el("h3", {}, el("span", { class: "rid", text: rec.id }), " ", el("span", { class: "muted", text: rec.table }), gm ? chip(gm.text, gm.cls) : null),
      el("p", { class: "verdict", text: verdict }),
      rec.cand ? null : el("p", { class: "muted", text: "Only the returned, rejected and cut records carry their per-stage scores in the response; this one's ranks come from the trace's candidate lists." }),
      el("table", { class: "kv" }, el("tr", {}, ...["stage", "", "rank", "score", "detail"].map((h) => el("th", { text: h }))), ...rows),
      el("button", { type: "button", text: "Show in the matrix", onclick: () => { showView("journey"); state.focusKey = key(rec.table, rec.id); renderMatrix(j); pin(key(rec.table, rec.id)); const tr = visibleRows().find((r) => r.dataset.key === key(rec.table, rec.id)); if (tr) focusRow(tr); } })));
  }
}

// ---------------------------------------------------------------- compare
async function compare() {
  if (state.inFlight) return;
  const chunk = $("chunk").value;
  if (!chunk.trim()) { setStatus("the chunk is empty: paste GDScript first", "error"); return; }
  closeDetail();
  clearResults("running A–F…");
  $("compare").replaceChildren(el("p", { class: "empty-msg", text: "running A–F…" }));
  showView("compare");
  setBusy(true);
  const cfg = settings();
  const runs = [];
  const seq = ++state.seq;
  try {
    for (const s of STRATS) {
      const why = unavailable(s);
      if (why) { runs.push({ strategy: s, unavailable: why, journey: null }); continue; }
      setStatus(`running ${s}…`);
      try {
        const result = await retrieve(s, chunk, cfg);
        runs.push({ strategy: s, journey: buildJourney(result, state.meta && state.meta.stage_lists) });
      } catch (e) { runs.push({ strategy: s, error: String(e.message || e), journey: null }); }
    }
    if (seq !== state.seq) return;
    state.compareRuns = runs;
    const mine = runs.find((r) => r.strategy === state.strategy && r.journey);
    if (mine) {
      state.journey = mine.journey;
      state.last = { chunk, strategy: state.strategy, journey: mine.journey, cfg };
      state.deltas = null;
    }
    const failed = runs.filter((r) => r.error);
    setStatus("compared " + runs.filter((r) => r.journey).map((r) => r.strategy).join(", ") +
      (runs.some((r) => r.unavailable) ? " · not runnable here: " + runs.filter((r) => r.unavailable).map((r) => r.strategy).join(", ") : "") +
      (failed.length ? " · failed: " + failed.map((r) => `${r.strategy} (${r.error})`).join("; ") : ""), failed.length ? "error" : "note");
    document.body.dataset.state = "done";
    if (state.journey) rerender(); else renderCompareView();
  } finally {
    setBusy(false);
  }
}

function renderCompareView() {
  renderCompare($("compare"), state.compareRuns, {
    gold, descriptions: (state.meta && state.meta.strategies) || {},
    onPick: (strategy, table, id) => {
      const run = state.compareRuns.find((r) => r.strategy === strategy);
      if (!run || !run.journey) return;
      state.strategy = strategy;
      $("st-" + strategy).checked = true;
      state.journey = run.journey;
      state.deltas = null;
      state.focusKey = key(table, id);
      showView("journey");
      renderStrip(run.journey); renderMatrix(run.journey); renderOutput(run.journey.result); fillWhy(run.journey);
      pin(key(table, id));
    },
  });
}

// ---------------------------------------------------------------- output
function renderOutput(result) {
  const lines = (result.results || []).map((c) => JSON.stringify(c.payload));
  state.jsonl = lines.join("\n") + (lines.length ? "\n" : "");
  $("jsonl").replaceChildren(...lines.map((l) => el("div", { class: "jl", text: l })));
  $("jsonl-note").textContent = `(${lines.length} records: the payload of each result strategy ${result.strategy} returns${result.strategy === "F" ? ", all accepted by the validator" : ""})`;
  $("json").textContent = JSON.stringify(result, null, 2);
}

init();
