// godot-rag debugger. Renders exactly the JSON of POST /api/retrieve.
// Every piece of chunk or record text is inserted with textContent: nothing is parsed as HTML.
"use strict";

const STRATS = ["A", "B", "C", "D", "E", "F"];
const state = { results: {}, current: null, selected: null, examples: [] };
const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) if (c != null) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function setStatus(msg, cls) { const s = $("status"); s.textContent = msg; s.className = cls || "note"; }

async function init() {
  const boxes = $("strategies");
  for (const s of STRATS) {
    const cb = el("input", { type: "checkbox", value: s, id: "st-" + s });
    if (["B", "D", "F"].includes(s)) cb.checked = true;
    boxes.append(el("label", {}, cb, " " + s));
  }
  try {
    const ex = await (await fetch("/api/examples")).json();
    state.examples = ex.examples;
    ex.examples.forEach((e, i) => $("example").append(el("option", { value: String(i), text: e.name })));
    $("chunk").value = ex.examples[0].chunkText;
    $("example").value = "0";
  } catch (e) { setStatus("could not load the examples: " + e, "error"); }
  $("example").addEventListener("change", () => {
    const e = state.examples[Number($("example").value)];
    if (e) $("chunk").value = e.chunkText;
  });
  $("file").addEventListener("change", async () => {
    const f = $("file").files[0];
    if (f) $("chunk").value = await f.text();
  });
  $("run").addEventListener("click", () => runAll(false));
  $("compare-btn").addEventListener("click", () => runAll(true));
  $("download").addEventListener("click", download);
}

function checked() { return STRATS.filter((s) => $("st-" + s).checked); }

async function retrieve(strategy) {
  const body = { chunkText: $("chunk").value, strategy, k: Number($("k").value) || 10, explain: true };
  const resp = await fetch("/api/retrieve", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
  const data = await resp.json().catch(() => ({ error: "the server's answer was not JSON" }));
  if (!resp.ok) throw new Error(`${resp.status}: ${data.error || (data.detail && JSON.stringify(data.detail)) || "error"}`);
  return data;
}

async function runAll(compare) {
  const strategies = checked();
  if (!strategies.length) { setStatus("choose at least one strategy", "error"); return; }
  if (!$("chunk").value.trim()) { setStatus("the chunk is empty: paste GDScript first", "error"); return; }
  state.results = {};
  $("out").replaceChildren(); $("compare").hidden = true; $("tabs").replaceChildren();
  for (const s of strategies) {
    setStatus(`running ${s}…`);
    try { state.results[s] = await retrieve(s); }
    catch (e) { state.results[s] = { error: String(e.message || e) }; }
  }
  const errors = Object.entries(state.results).filter(([, r]) => r.error);
  setStatus(errors.length ? errors.map(([s, r]) => `${s}: ${r.error}`).join(" · ") : "done", errors.length ? "error" : "note");
  renderTabs(compare ? "compare" : strategies[0]);
}

function renderTabs(active) {
  const tabs = $("tabs"); tabs.replaceChildren();
  for (const s of Object.keys(state.results)) {
    tabs.append(el("button", { class: s === active ? "active" : "", text: "Strategy " + s, onclick: () => renderTabs(s) }));
  }
  tabs.append(el("button", { class: active === "compare" ? "active" : "", text: "Compare", onclick: () => renderTabs("compare") }));
  if (active === "compare") { $("out").replaceChildren(); renderCompare(); }
  else { $("compare").hidden = true; renderStrategy(active); }
}

function allCands(r) { return [...(r.results || []), ...(r.rejected || [])]; }

function badge(source) {
  const s = (source || "").replace("profile:", "");
  const cls = ["bm25", "embedding", "both", "tsquery"].includes(s) ? "b-" + s : "b-other";
  return el("span", { class: "badge " + cls, text: source || "?" });
}

function label(c) {
  const p = c.payload;
  if (c.table === "docs_chunks") return c.id + "  [" + (p.section_path || []).join(" / ") + "]";
  if (c.table === "api_mapping") return `${p.source_api} → ${p.target_api} (${p.change_type})`;
  return `${p.label} (${p.severity})`;
}

function column(title, meta, items) {
  const col = el("div", { class: "col" }, el("h2", { text: title }));
  if (meta) col.append(el("div", { class: "meta", text: meta }));
  if (!items.length) col.append(el("div", { class: "meta", text: "no candidates" }));
  for (const it of items) col.append(it);
  return col;
}

function candRow(c, r, opts) {
  const row = el("div", { class: "cand" + (c.verdict ? " " + c.verdict : "") });
  row.append(el("div", {}, badge(c.source), el("span", { class: "id", text: label(c) })));
  if (opts.score != null) {
    const width = Math.max(2, Math.round(100 * opts.score / (opts.max || 1)));
    row.append(el("div", { class: "bar", style: `width:${Math.min(width, 100)}%` }));
    row.append(el("div", { class: "terms", text: `${opts.scoreLabel} ${Number(opts.score).toFixed(4)}${opts.rank ? "  #" + opts.rank : ""}` }));
  }
  if (opts.move != null && opts.move !== 0) {
    row.append(el("span", { class: opts.move > 0 ? "up" : "down", text: (opts.move > 0 ? "▲ " : "▼ ") + Math.abs(opts.move) }));
  }
  if (opts.terms) row.append(el("div", { class: "terms", text: opts.terms }));
  if (opts.verdict) row.append(el("div", { class: "v-" + c.verdict, text: (c.verdict === "accept" ? "✔ accept: " : "✘ reject: ") + (c.reason || "") }));
  row.addEventListener("click", () => { state.selected = c; renderDetail(c, r); document.querySelectorAll(".cand.sel").forEach((n) => n.classList.remove("sel")); row.classList.add("sel"); });
  row.addEventListener("mouseenter", () => renderDetail(c, r));
  return row;
}

function renderStrategy(s) {
  const r = state.results[s];
  const out = $("out"); out.replaceChildren();
  showJson(r);
  if (!r || r.error) { out.append(column("Strategy " + s, r ? r.error : "no result", [])); return; }
  const cands = allCands(r);
  const t = r.trace || {};
  const raw = column("1. raw chunkText", `${t.chunk_chars} characters · ${t.total_ms} ms\n` +
    (t.tokens ? "tokens: " + [...new Set(t.tokens)].slice(0, 60).join(" ") : ""), []);
  raw.append(el("pre", { class: "meta raw", text: r.chunk_text }));
  out.append(raw);
  if (s === "A") {
    const lines = [`tsquery: ${t.tsquery || ""}`];
    for (const [table, info] of Object.entries(t.tables || {})) {
      lines.push(`${table}: ${info.row_count} rows`);
      const d = info.zero_hit_diagnosis;
      if (d) {
        lines.push(`  returned nothing because every token is ANDed; the best single row (${d.best_row}) has ${d.best_subset.length}/${d.token_rows.length} tokens`);
        lines.push("  missing there: " + d.missing_from_best.join(", "));
        lines.push("  rows per token: " + d.token_rows.map((x) => `${x.token}=${x.rows}`).join(" "));
      }
    }
    out.append(column("tsquery (plainto_tsquery + ts_rank_cd)", lines.join("\n"),
      cands.map((c) => candRow(c, r, { score: c.trace.tsquery.ts_rank_cd, max: Math.max(...cands.map((x) => x.trace.tsquery.ts_rank_cd)), scoreLabel: "ts_rank_cd", rank: c.rank }))));
  }
  if (t.profile) {
    const ch = t.profile_checks.checks;
    out.append(column("Qwen profile (E)", JSON.stringify(t.profile, null, 1) +
      "\nhallucinated literals: " + ch.important_literals.hallucinated.join(", ") +
      "\nhallucinated migration signals: " + ch.migration_signals.hallucinated.join(", ") +
      "\nappeared: " + t.profile_diff.appeared.length + " · vanished: " + t.profile_diff.vanished.length, []));
  }
  const by = (stage, key) => cands.filter((c) => c.trace[stage]).sort((a, b) => a.trace[stage].rank - b.trace[stage].rank);
  const bm = by("bm25");
  if (bm.length) {
    const max = Math.max(...bm.map((c) => c.trace.bm25.score));
    out.append(column("2. BM25 candidates", "score and matched terms (df/tf/contribution)", bm.map((c) => candRow(c, r, {
      score: c.trace.bm25.score, max, scoreLabel: "bm25", rank: c.trace.bm25.rank,
      terms: ((c.trace.explain || {}).matched_terms || []).slice(0, 6).map((x) => `${x.term} df=${x.df} tf=${x.tf} +${x.contribution}`).join(" · "),
    }))));
  }
  const em = by("embedding");
  if (em.length) out.append(column("3. embedding candidates", "cosine similarity", em.map((c) => candRow(c, r, { score: c.trace.embedding.cosine, max: 1, scoreLabel: "cos", rank: c.trace.embedding.rank }))));
  const fu = by("fuse");
  if (fu.length) {
    const max = Math.max(...fu.map((c) => c.trace.fuse.score));
    out.append(column("4. union", "source badges: bm25 / embedding / both", fu.map((c) => candRow(c, r, { score: c.trace.fuse.score, max, scoreLabel: c.trace.fuse.method, rank: c.trace.fuse.rank }))));
  }
  const rr = by("rerank");
  if (rr.length) out.append(column("5. reranker", "score after reranking, rank change", rr.map((c) => candRow(c, r, { score: c.trace.rerank.score, max: 1, scoreLabel: c.trace.rerank.backend, rank: c.trace.rerank.rank, move: c.trace.rerank.rank_change }))));
  else if (s === "F") out.append(column("5. reranker", `reranker: ${(r.config || {}).reranker} — the fused order goes to the validator unchanged`, []));
  const va = cands.filter((c) => c.verdict);
  if (va.length) out.append(column("6. validator", "direct evidence → accept / reject", va.map((c) => candRow(c, r, { verdict: true }))));
  out.append(column("7. final JSONL", `${(r.results || []).length} returned, ${(r.rejected || []).length} rejected`,
    [...(r.results || []).map((c) => candRow(c, r, { score: c.score, max: Math.max(...r.results.map((x) => x.score)), scoreLabel: "score", rank: c.rank, verdict: !!c.verdict })),
     ...(r.rejected || []).map((c) => candRow(c, r, { verdict: true }))]));
  const detail = el("div", { id: "detail" });
  out.append(detail);
  if (!(r.results || []).length) setStatus(`strategy ${s} returned no records` + (s === "A" ? " (see why in the tsquery column)" : ""), "note");
}

function termsOf(c) {
  const terms = [];
  const contra = [];
  const bm = c.trace.explain;
  if (bm && bm.matched_terms) bm.matched_terms.forEach((x) => terms.push(x.term));
  const v = c.trace.validate;
  if (v) {
    (v.evidence || []).forEach((e) => terms.push(String(e.literal).replace(/^"|"$/g, "")));
    (v.contradictions || []).forEach((e) => contra.push(e.literal));
  }
  return { terms, contra };
}

function highlighted(text, terms, contra) {
  const pre = el("pre");
  const all = [...terms.map((t) => [t, false]), ...contra.map((t) => [t, true])].filter(([t]) => t && t.length > 1);
  if (!all.length) { pre.textContent = text; return pre; }
  const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const re = new RegExp("(?<![A-Za-z0-9_])(" + all.map(([t]) => esc(t)).sort((a, b) => b.length - a.length).join("|") + ")(?![A-Za-z0-9_])", "gi");
  const contraSet = new Set(contra.map((x) => x.toLowerCase()));
  let last = 0;
  for (const m of text.matchAll(re)) {
    pre.append(document.createTextNode(text.slice(last, m.index)));
    pre.append(el("mark", { class: contraSet.has(m[0].toLowerCase()) ? "contra" : "", text: m[0] }));
    last = m.index + m[0].length;
  }
  pre.append(document.createTextNode(text.slice(last)));
  return pre;
}

function renderDetail(c, r) {
  const detail = $("detail");
  if (!detail) return;
  const { terms, contra } = termsOf(c);
  const p = c.payload;
  const text = c.table === "docs_chunks" ? p.content : JSON.stringify(p, null, 1);
  detail.replaceChildren(el("div", { class: "meta", text: `${c.table} · ${c.id} — highlighted: matched terms and direct evidence (yellow), contradicting near-misses (red)` }),
    el("div", { class: "pair" }, highlighted($("chunk").value, terms, contra), highlighted(text || "", terms, contra)));
}

function renderCompare() {
  const box = $("compare"); box.hidden = false; box.replaceChildren();
  const strategies = Object.keys(state.results).filter((s) => !state.results[s].error);
  const ids = new Map();
  for (const s of strategies) for (const c of state.results[s].results || []) if (c.table === "docs_chunks") ids.set(c.id, c);
  box.append(el("p", { class: "note", text: "Each cell: the record's final rank under that strategy, or where it was lost (stage ranks from the trace). Green: returned." }));
  const table = el("table", { class: "cmp" });
  table.append(el("tr", {}, el("th", { text: "docs_chunks record" }), ...strategies.map((s) => el("th", { text: s }))));
  const agree = [...ids.keys()].sort((a, b) => strategies.filter((s) => found(s, b)).length - strategies.filter((s) => found(s, a)).length);
  for (const id of agree) {
    const row = el("tr", {}, el("td", { class: "rel", text: label(ids.get(id)) }));
    for (const s of strategies) {
      const r = state.results[s];
      const hit = (r.results || []).find((c) => c.id === id);
      const cell = el("td", { class: hit ? "hit" : "" });
      if (hit) cell.textContent = "#" + hit.rank + (hit.verdict ? " " + hit.verdict : "");
      else cell.textContent = lostAt(r, id);
      row.append(cell);
    }
    table.append(row);
  }
  box.append(table);
  const maps = new Set();
  for (const s of strategies) for (const c of state.results[s].results || []) if (c.table !== "docs_chunks") maps.add(c.table + ":" + c.id);
  if (maps.size) {
    const t2 = el("table", { class: "cmp" });
    t2.append(el("tr", {}, el("th", { text: "api_mapping / label_prototypes" }), ...strategies.map((s) => el("th", { text: s }))));
    for (const key of maps) {
      const row = el("tr", {}, el("td", { text: key }));
      for (const s of strategies) {
        const hit = (state.results[s].results || []).find((c) => c.table + ":" + c.id === key);
        row.append(el("td", { class: hit ? "hit" : "", text: hit ? "#" + hit.rank + (hit.verdict ? " " + hit.verdict : "") : "–" }));
      }
      t2.append(row);
    }
    box.append(t2);
  }
  showJson(state.results);
}

function found(s, id) { return (state.results[s].results || []).some((c) => c.id === id); }

function lostAt(r, id) {
  const rej = (r.rejected || []).find((c) => c.id === id);
  if (rej) return "rejected: " + (rej.reason || "");
  const lists = ((r.trace || {}).candidate_ids || {}).docs_chunks || {};
  const parts = [];
  for (const [stage, list] of Object.entries(lists)) {
    const i = list.indexOf(id);
    parts.push(`${stage} ${i >= 0 ? "#" + (i + 1) : "–"}`);
  }
  if (!parts.length) return r.strategy === "A" ? "no tsquery hit" : "not found";
  return parts.join(", ");
}

function showJson(obj) {
  $("json-panel").hidden = false;
  $("json").textContent = JSON.stringify(obj, null, 2);
}

function download() {
  const blob = new Blob([$("json").textContent], { type: "application/json" });
  const a = el("a", { href: URL.createObjectURL(blob), download: "godot-rag-result.json" });
  document.body.append(a); a.click(); a.remove();
}

init();
