// The detail panel: one record's chunk-vs-record view (aligned line by line, shared literals, renamings,
// contradictions) and every number behind its journey (BM25 terms, fusion arithmetic, validator, versions).
import { el, num, table, chip } from "./dom.js";
import { outcomeText } from "./journey.js";

const TOKEN_RE = /[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\S/g;
const IDENT_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const KEYWORDS = new Set(["func", "var", "const", "if", "elif", "else", "for", "while", "in", "return", "pass", "and", "or", "not",
  "extends", "class_name", "signal", "match", "break", "continue", "true", "false", "null", "self", "await", "static", "enum"]);

export function tokens(line) {
  const out = [];
  for (const m of line.matchAll(TOKEN_RE)) out.push({ t: m[0], i: m.index });
  return out;
}

function norm(t) { return t.replace(/^&(?=")/, ""); }

function lcs(a, b, eq) {  // pairs of indexes of a longest common subsequence
  const n = a.length, m = b.length;
  const d = Array.from({ length: n + 1 }, () => new Int16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) d[i][j] = eq(a[i], b[j]) ? d[i + 1][j + 1] + 1 : Math.max(d[i + 1][j], d[i][j + 1]);
  const pairs = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (eq(a[i], b[j])) { pairs.push([i, j]); i++; j++; } else if (d[i + 1][j] >= d[i][j + 1]) i++; else j++;
  }
  return pairs;
}

function weight(t) { return IDENT_RE.test(t) || /^["'\d&]/.test(t) ? 1 : 0.3; }  // names and literals count, punctuation a little

function similarity(ta, tb) {
  if (!ta.length || !tb.length) return 0;
  const pairs = lcs(ta, tb, (x, y) => norm(x.t) === norm(y.t));
  const total = (ts) => ts.reduce((s, x) => s + weight(x.t), 0);
  const shared = pairs.reduce((s, [i]) => s + weight(ta[i].t), 0);
  let sim = (2 * shared) / (total(ta) + total(tb));
  // a renaming keeps the line's shape: same tokens in the same places, one name for another
  if (ta.length === tb.length && pairs.length >= ta.length / 2) {
    const same = ta.filter((x, k) => norm(x.t) === norm(tb[k].t) || (IDENT_RE.test(x.t) && IDENT_RE.test(tb[k].t))).length;
    if (same === ta.length) sim = Math.max(sim, 0.8);
  }
  return sim;
}

/** Line pairs (chunk line i, record line j) in order, by dynamic programming over line similarity. */
export function alignLines(aLines, bLines) {
  const ta = aLines.map((l) => tokens(l)), tb = bLines.map((l) => tokens(l));
  const n = aLines.length, m = bLines.length;
  const sim = ta.map((x) => tb.map((y) => similarity(x, y)));
  const d = Array.from({ length: n + 1 }, () => new Float64Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) {
    const s = sim[i][j] >= 0.5 ? sim[i][j] + d[i + 1][j + 1] : -1;
    d[i][j] = Math.max(d[i + 1][j], d[i][j + 1], s);
  }
  const pairs = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (sim[i][j] >= 0.5 && Math.abs(d[i][j] - (sim[i][j] + d[i + 1][j + 1])) < 1e-9) { pairs.push([i, j]); i++; j++; }
    else if (d[i + 1][j] >= d[i][j + 1]) i++; else j++;
  }
  return { pairs, ta, tb };
}

/** Token marks for one aligned pair: shared tokens, and identifiers renamed in place (a -> b). */
function diffPair(ta, tb) {
  const pairs = lcs(ta, tb, (x, y) => norm(x.t) === norm(y.t));
  const markA = new Array(ta.length).fill(null), markB = new Array(tb.length).fill(null);
  const renames = [];
  for (const [i, j] of pairs) if (IDENT_RE.test(ta[i].t) || /^["'\d]/.test(ta[i].t) || /^&?"/.test(ta[i].t)) { markA[i] = "shared"; markB[j] = "shared"; }
  // gaps between matched tokens: one identifier against one identifier is a renaming
  const anchors = [[-1, -1], ...pairs, [ta.length, tb.length]];
  for (let k = 0; k + 1 < anchors.length; k++) {
    const [i0, j0] = anchors[k], [i1, j1] = anchors[k + 1];
    const ga = ta.slice(i0 + 1, i1), gb = tb.slice(j0 + 1, j1);
    if (ga.length === gb.length && ga.length > 0 && ga.length <= 2) {
      ga.forEach((x, q) => {
        const y = gb[q];
        if (IDENT_RE.test(x.t) && IDENT_RE.test(y.t) && x.t !== y.t && !KEYWORDS.has(x.t) && !KEYWORDS.has(y.t)) {
          markA[i0 + 1 + q] = "renamed"; markB[j0 + 1 + q] = "renamed";
          renames.push([x.t, y.t]);
        }
      });
    }
  }
  return { markA, markB, renames };
}

function lineNode(text, toks, marks, contra, extraTerms) {
  const code = el("code");
  let last = 0;
  toks.forEach((tok, k) => {
    if (tok.i > last) code.append(document.createTextNode(text.slice(last, tok.i)));
    let cls = marks ? marks[k] : null;
    if (contra.has(tok.t)) cls = "contra";
    else if (!cls && extraTerms && extraTerms.has(tok.t.toLowerCase())) cls = "shared";
    code.append(cls ? el("mark", { class: cls, text: tok.t, title: cls === "contra" ? "contradiction" : cls === "renamed" ? "renamed" : "shared" })
      : document.createTextNode(tok.t));
    last = tok.i + tok.t.length;
  });
  if (last < text.length) code.append(document.createTextNode(text.slice(last)));
  return code;
}

/** The record text to align against: its GDScript code blocks (or its text), with the record line numbers. */
export function recordText(rec) {
  const p = rec.payload || {};
  if (rec.table === "docs_chunks") {
    const blocks = (p.code_blocks || []).filter((b) => (b.language || "gdscript") === "gdscript");
    if (blocks.length) {
      const lines = [];
      blocks.forEach((b, k) => {
        if (k) lines.push({ text: "", sep: true });
        b.code.split("\n").forEach((t, q) => lines.push({ text: t, no: b.line != null ? b.line + q : null }));
      });
      return { lines, kind: "GDScript code blocks" };
    }
    return { lines: (p.content || "").split("\n").map((t, q) => ({ text: t, no: q + 1 })), kind: "record text" };
  }
  const keys = rec.table === "api_mapping"
    ? ["mapping_id", "source_api", "target_api", "change_type", "godot_from", "godot_to", "match_terms", "negative_patterns", "notes"]
    : ["label", "severity", "description", "must_match", "must_not_match", "examples", "rules"];
  const lines = [];
  for (const k of keys.filter((x) => p[x] != null)) lines.push({ text: `${k}: ${typeof p[k] === "string" ? p[k] : JSON.stringify(p[k])}` });
  for (const k of Object.keys(p)) if (!keys.includes(k) && k !== "metadata") lines.push({ text: `${k}: ${typeof p[k] === "string" ? p[k] : JSON.stringify(p[k])}` });
  return { lines, kind: "record fields" };
}

/** Chunk vs record, aligned line by line. Returns {node, renames, contradictions}. */
export function sideBySide(chunk, rec) {
  const cLines = chunk.split("\n");
  const r = recordText(rec);
  const v = (rec.cand && rec.cand.trace && rec.cand.trace.validate) || null;
  const contraPairs = (v && v.contradictions || []).map((c) => (typeof c === "string" ? { literal: c } : c));
  const contra = new Set();
  contraPairs.forEach((c) => { if (c.literal) contra.add(String(c.literal)); if (c.near_miss_of) contra.add(String(c.near_miss_of)); });
  const terms = new Set();
  const ex = rec.cand && rec.cand.trace && rec.cand.trace.explain;
  if (ex) ex.matched_terms.forEach((x) => { if (!(x.query_weight === 0)) terms.add(String(x.term).toLowerCase()); });
  (v && v.evidence || []).forEach((e) => String(e.literal).split(/[^A-Za-z0-9_]+/).forEach((w) => w.length > 1 && terms.add(w.toLowerCase())));
  const code = rec.table === "docs_chunks";
  const { pairs, ta, tb } = code ? alignLines(cLines, r.lines.map((x) => x.text)) : { pairs: [], ta: cLines.map(tokens), tb: r.lines.map((x) => tokens(x.text)) };
  const renames = new Map();
  const grid = el("div", { class: "align", role: "table", "aria-label": "chunk and record, aligned line by line" });
  grid.append(el("div", { class: "ah" }, "chunk"), el("div", { class: "ah" }, `record (${r.kind})`));
  const evidenceLines = new Set((v && v.evidence || []).map((e) => e.chunk_line).filter((x) => x != null));
  (v && v.occurrences || []).forEach((o) => o.line != null && evidenceLines.add(o.line));
  const addRow = (i, j, marks) => {
    const left = i == null ? el("div", { class: "al empty" }) :
      el("div", { class: "al" + (evidenceLines.has(i + 1) ? " ev" : "") }, el("span", { class: "ln", text: String(i + 1) }),
        lineNode(cLines[i], ta[i], marks ? marks.markA : null, contra, marks ? null : terms));
    const rl = j == null ? null : r.lines[j];
    const right = j == null ? el("div", { class: "al empty" }) :
      el("div", { class: "al" + (rl.sep ? " sep" : "") }, el("span", { class: "ln", text: rl.no != null ? String(rl.no) : "" }),
        lineNode(rl.text, tb[j], marks ? marks.markB : null, contra, marks ? null : terms));
    if (i != null && j != null) { left.classList.add("paired"); right.classList.add("paired"); }
    grid.append(left, right);
  };
  let i = 0, j = 0;
  for (const [pi, pj] of [...pairs, [cLines.length, r.lines.length]]) {
    while (i < pi || j < pj) {  // unpaired lines between two pairs, side by side where both sides have some
      addRow(i < pi ? i : null, j < pj ? j : null, null);
      if (i < pi) i++;
      if (j < pj) j++;
    }
    if (pi < cLines.length && pj < r.lines.length) {
      const marks = diffPair(ta[pi], tb[pj]);
      for (const [a, b] of marks.renames) {
        const k = a + "\u0000" + b;
        renames.set(k, { from: a, to: b, n: (renames.get(k) || { n: 0 }).n + 1 });
      }
      addRow(pi, pj, marks);
      i = pi + 1; j = pj + 1;
    }
  }
  const isContra = (x) => contraPairs.some((c) => (c.literal === x.to && c.near_miss_of === x.from) || (c.literal === x.from && c.near_miss_of === x.to));
  const renameList = [...renames.values()].filter((x) => !isContra(x));
  return { node: grid, renames: renameList, contradictions: contraPairs, paired: pairs.length };
}

function section(title, ...body) {
  return el("section", { class: "dsec" }, el("h3", { text: title }), ...body);
}

function fusionArithmetic(rec, result) {
  const t = (rec.cand && rec.cand.trace) || {};
  const rows = [];
  const out = [];
  const f = t.fuse;
  if (f) {
    for (const [name, e] of Object.entries(f.inputs)) {
      const w = f.weights[name] ?? 1;
      const contrib = f.method === "rrf" ? w / (f.rrf_k + e.rank) : w * (e.normalised ?? 0);
      rows.push([name, "#" + e.rank, num(e.score, 4), f.method === "rrf" ? `1/(${f.rrf_k}+${e.rank})` : num(e.normalised, 4), "× " + num(w), num(contrib, 4)]);
    }
    for (const name of Object.keys(f.weights)) if (!f.inputs[name]) rows.push([name, "not found", "", f.method === "zscore" ? "list minimum" : "0", "× " + num(f.weights[name]), "0"]);
    out.push(table(["input", "rank", "raw score", `normalised (${f.method})`, "weight", "contribution"], rows),
      el("p", { class: "sum", text: `sum = fused score ${num(f.score, 4)} → fused rank #${f.rank}` }));
  } else if (t.union) {
    out.push(el("p", { text: `no fusion in ${result.strategy}: found by ${t.union.source}` }));
  }
  const steps = [];
  if (t.codematch) steps.push(`code-clone: ${num(t.codematch.score_before, 4)} × (1 + ${num(t.codematch.alpha)} × ratio ${num(t.codematch.ratio, 4)}) = ${num(t.codematch.score, 4)} → #${t.codematch.rank}`);
  if (t.merge) steps.push(`segment merge: whole chunk #${t.merge.whole_rank ?? "–"}, segments ${t.merge.segment_ranks.map((r) => (r == null ? "–" : "#" + r)).join(" ")} → best #${t.merge.best_rank} → merged #${t.merge.rank} (score 1/rank = ${num(t.merge.score, 4)})`);
  if (t.rerank) steps.push(`reranker ${t.rerank.backend}: model ${num(t.rerank.model_score, 4)}, weight ${t.rerank.weight}: ${num(t.rerank.score_before, 4)} → ${num(t.rerank.score, 4)}, #${t.rerank.rank_before ?? "–"} → #${t.rerank.rank}`);
  if (t.api) steps.push(`api source: ${t.api.score_before != null ? num(t.api.score_before, 4) + " + " : ""}${num(t.api.weight)} = ${num(t.api.score, 4)} (uses: ${t.api.uses.map((u) => `${u.api} line ${u.line}`).join(", ")})`);
  if (t.score) steps.push(`final score: ${num(t.score.score_before, 4)} × (0.5 + 0.5 × ${t.score.confidence_from} confidence ${num(t.score.confidence, 4)}) = ${num(t.score.score, 4)}`);
  if (t.cut) steps.push(t.cut.kept ? `cut: kept, rank #${t.cut.rank}${t.cut.group ? " in " + t.cut.group : ""} (position ${t.cut.position} ≤ k ${t.cut.k})` : `cut: position ${t.cut.position} > k ${t.cut.k}`);
  if (steps.length) out.push(el("ol", { class: "steps" }, ...steps.map((s) => el("li", { text: s }))));
  return out;
}

function journeySteps(rec, journey) {
  const list = el("ol", { class: "journey-steps" });
  for (const col of journey.columns) {
    const cell = rec.cells[col.name] || {};
    const lost = rec.lost === col.name && rec.outcome !== "returned";
    let text = col.off ? "off" : !cell.present ? (lost ? "" : "–") : [cell.rank != null ? "#" + cell.rank : "", cell.score != null ? num(cell.score, 4) : "", cell.badge || "", cell.verdict || ""].filter(Boolean).join(" ");
    if (lost) text = (text ? text + " — " : "") + "LOST HERE: " + (rec.reason || "");
    list.append(el("li", { class: lost ? "lost" : cell.present ? "" : "absent" }, el("b", { text: col.name + ": " }), text));
  }
  return list;
}

// A guide's fitted-model verdict as arithmetic: each feature's value x weight = contribution, their sum with the
// bias is the logit, P(direct) = sigmoid(logit) against the stored threshold; then the shared API it rests on.
/** The named rule that decided the verdict, and the rules it overruled, first to last (Candidate.decision). */
function decidedBy(d) {
  if (!d) return null;
  const chain = [];
  for (let x = d; x; x = x.overrules) chain.unshift(x.rule);
  return el("p", { class: "decided-by", text: `decided by rule ${d.rule}` + (chain.length > 1 ? ` (${chain.join(" → ")})` : "") });
}

function guideModelSection(m) {
  const rows = Object.keys(m.features).map((f) => {
    const c = m.contributions[f], x = m.features[f];
    return [f, num(x, 4), x ? num(c / x, 4) : "", num(c, 4)];
  });
  const shared = [...(m.shared_api || []), ...(m.shared_globals || []), ...(m.shared_callbacks || []),
    ...(m.shared_constructs || []).map((c) => ({ api: `${c.construct} (GDScript construct)`, specificity: c.specificity }))];
  return section("Guide model",
    el("p", { text: `P(direct) ${num(m.p, 3)} ${m.p >= m.threshold ? "≥" : "<"} threshold ${num(m.threshold, 3)}: logit ${num(m.logit, 4)} = bias ${num(m.bias, 4)} + the contributions`
      + (m.copied_code ? " · the record holds the code the chunk copies (accepted by fact)" : "")
      + (m.copy_unanchored ? " · its code matches the chunk's lines only through their frame (keywords, signatures, the author's names): no copy" : "")
      + (m.nothing_shared ? " · rejected: it shares no API, class or callback with the chunk, only the likeness of its text" : "")
      + (m.generic_only ? ` · rejected: all it shares is generic (the most specific, ${m.generic_only.most_specific}, weighs ${num(m.generic_only.specificity, 2)})` : "") }),
    table(["feature", "value", "weight", "contribution"], rows),
    shared.length ? table(["shared API", "specificity"], shared.map((a) => [a.coordinate ? `${a.api} (a coordinate)` : a.api, num(a.specificity, 4)])) : el("p", { class: "muted", text: "no shared API" }),
    (m.strangers || []).length ? el("p", { text: `classes foreign to the chunk's: ${m.strangers.join(", ")}`
      + (m.foreign_class ? ` (the most specific: ${m.foreign_class.class}, ${num(m.foreign_class.specificity, 4)})` : "") }) : null,
    m.foreign_section ? el("p", { text: `the record is of ${m.foreign_section.section}, whose own classes (${m.foreign_section.classes.join(", ")}) neither the chunk nor its project uses: a contradiction` }) : null,
    m.native_page ? el("p", { text: `the record is of ${m.native_page.page}, whose code is ${m.native_page.languages.join("/")} (the engine's or a GDExtension's, not a script's): a contradiction` }) : null,
    m.worlds ? el("p", { text: `the record is ${m.worlds.record} (${m.worlds.record_classes.join(", ")}), the chunk ${m.worlds.chunk} (${m.worlds.chunk_classes.join(", ")}): a contradiction` }) : null);
}

// The learned ranker's verdict as arithmetic (trace `rank`): each feature's value x weight = contribution, the logit,
// P(direct) against the group's threshold; a reject names the feature that kept it out.
function rankerSection(r) {
  const rows = Object.keys(r.features).map((f) => {
    const c = r.contributions[f], x = r.features[f];
    return [f, num(x, 4), x ? num(c / x, 4) : "", num(c, 4)];
  });
  return section("Learned ranker",
    el("p", { text: `${r.group}: P(direct) ${num(r.p, 3)} ${r.accepted ? "≥" : "<"} threshold ${num(r.threshold, 3)} (was ${r.verdict_before}): logit ${num(r.logit, 4)} = bias ${num(r.bias, 4)} + the contributions`
      + (r.kept_out_by ? ` · kept out most by ${r.kept_out_by} (${num(r.contributions[r.kept_out_by], 4)})` : "") }),
    table(["feature", "value", "weight", "contribution"], rows));
}

export function renderRecord(container, rec, journey, chunk, gold) {
  const res = journey.result;
  const p = rec.payload || {};
  const head = el("div", { class: "dhead" },
    el("span", { class: "outcome o-" + rec.outcome, text: outcomeText(rec) }), " ",
    el("b", { class: "rid", text: rec.id }), el("span", { class: "muted", text: "  " + rec.table + (p.section_path ? " · " + p.section_path.join(" / ") : "") }));
  const gm = gold && gold.mark(rec);
  if (gm) head.append(" ", chip(gm.text, gm.cls));
  const body = el("div", { class: "dbody" });
  const left = el("div", { class: "dleft" });
  const right = el("div", { class: "dright" });
  if (rec.payload) {
    const sbs = sideBySide(chunk, rec);
    const chips = el("div", { class: "chips" });
    for (const c of sbs.contradictions) chips.append(chip(c.near_miss_of ? `${c.literal} ≠ ${c.near_miss_of}` : `✕ ${c.literal}`, "contra",
      "contradiction: the record uses " + c.literal + (c.near_miss_of ? " where the chunk uses " + c.near_miss_of : "") + (c.in_code === false ? " (in its text, not its code)" : "")));
    for (const r of sbs.renames) chips.append(chip(`${r.from}→${r.to}`, "rename", `renamed: the chunk's ${r.from} is the record's ${r.to} (${r.n} aligned line${r.n > 1 ? "s" : ""})`));
    if (!chips.childNodes.length) chips.append(el("span", { class: "muted", text: "no renamings or contradictions" }));
    left.append(chips, sbs.node);
    if (rec.table === "docs_chunks" && p.content) left.append(el("details", {}, el("summary", { text: "whole record text" }), el("pre", { class: "whole", text: p.content })));
  } else {
    left.append(el("p", { class: "muted", text: "This record's text is not in the response (only the returned, rejected and cut records carry their payload); its ranks come from the trace's candidate lists." }));
  }
  right.append(section("Journey", el("p", { class: rec.outcome === "returned" ? "ok" : "bad", text: rec.outcome === "returned" ? `returned at #${rec.finalRank}${rec.group ? " (" + rec.group + ")" : ""}` : rec.reason || "" }), journeySteps(rec, journey)));
  const t = (rec.cand && rec.cand.trace) || {};
  const v = t.validate;
  if (v) {
    right.append(section("Validator", el("p", {}, el("span", { class: v.accepted ? "v-accept" : "v-reject", text: v.verdict }),
      ` · confidence ${num(v.confidence, 3)}` + (v.support != null ? ` · support ${num(v.support)} against ${num(v.against)} · strong ${v.strong}` : "") + (v.page_class ? ` · page of class ${v.page_class}` : "")
      + (v.copy_source ? " · the chunk copies this page" : "") + (v.copied_from ? ` · the chunk copies ${v.copied_from}` : "") + (v.repeats ? ` · ${v.repeats} shows all this shows` : "")),
      decidedBy(rec.cand && rec.cand.decision),
      v.reasons.length ? el("ul", { class: "reasons" }, ...v.reasons.map((r) => el("li", { text: r }))) : null,
      v.evidence.length ? table(["direct evidence", "kind", "weight", "chunk line"], v.evidence.map((e) => [e.literal, e.kind, e.weight != null ? num(e.weight) : "", e.chunk_line ?? ""])) : el("p", { class: "muted", text: "no direct evidence" }),
      v.contradictions.length ? table(["contradiction", "near miss of", "weight", "in code"], v.contradictions.map((c) => typeof c === "string" ? [c, "", "", ""] : [c.literal, c.near_miss_of || "", c.weight != null ? num(c.weight) : "", c.in_code == null ? "" : c.in_code ? "yes" : "no"])) : null));
  }
  if (v && v.model) right.append(guideModelSection(v.model));
  if (t.rank) right.append(rankerSection(t.rank));
  if (t.judge) {
    const j = t.judge, occ = j.occurrence ? ` about line ${j.occurrence.line}:${j.occurrence.col}` : "";
    right.append(section("Qwen judge", el("p", { text: `${j.model}, ${j.question} question${occ}: answer ${j.answer}, P(yes) ${num(j.p_yes)}, confidence ${num(j.confidence)}${j.cached ? " (cached)" : ""}` }),
      el("p", { text: `${j.mode}: ${j.rule}${j.verdict_before ? ` (was ${j.verdict_before})` : ""}` }),
      j.cited_hallucinated && j.cited_hallucinated.length ? el("p", { text: `hallucinated citations dropped: ${j.cited_hallucinated.join(", ")}` }) : null,
      el("pre", { class: "small", text: j.raw_answer })));
  }
  const qv = (res.trace || {}).version;
  if ((v && v.occurrences) || qv) {
    const sec = section("Version decisions");
    if (qv) sec.append(el("p", { text: `query: hint ${qv.hint}, lean ${qv.lean ?? "none"}` + ((qv.godot3_markers || []).length ? ` · Godot 3 markers: ${qv.godot3_markers.join("; ")}` : "") + ((qv.godot4_markers || []).length ? ` · Godot 4 markers: ${qv.godot4_markers.join("; ")}` : "") }));
    if (v && v.occurrences) sec.append(v.occurrences.length ? table(["line", "col", "status", "region", "rule", "why"], v.occurrences.map((o) => [o.line, o.col, o.status, o.region || "", o.rule || "", o.why || ""])) : el("p", { class: "muted", text: "no occurrence of the old name in the chunk" }));
    right.append(sec);
  }
  right.append(section("Scores, step by step", ...fusionArithmetic(rec, res)));
  const ex = t.explain;
  if (ex) right.append(section("BM25 terms", el("p", { class: "muted", text: `k1 ${ex.k1}, b ${ex.b}, doc length ${ex.dl} (avg ${num(ex.avgdl, 1)}), ${ex.n_docs} docs; score ${num(ex.score, 4)}` }),
    table(["term", "df", "tf", "idf", "tfn", "contribution"], ex.matched_terms.map((x) => [x.term + (x.query_weight === 0 ? " (local name, weight 0)" : x.query_weight != null && x.query_weight !== 1 ? ` (×${x.query_weight})` : ""), x.df, x.tf, num(x.idf), num(x.tfn), num(x.contribution, 4)]))));
  if (rec.table !== "docs_chunks" && rec.payload) right.append(section("Payload", el("pre", { class: "small", text: JSON.stringify(p, null, 1) })));
  body.append(left, right);
  container.replaceChildren(head, body);
}

export function renderStage(container, stage, journey) {
  const res = journey.result;
  const t = res.trace || {};
  const body = el("div", { class: "dright wide" });
  body.append(section("What it does", el("p", { text: stage.about || "" })),
    section("Its log for this chunk", el("p", { class: "muted", text: stage.ms != null ? `${stage.ms} ms` : "" }), el("pre", { class: "small", text: JSON.stringify(stage.info || {}, null, 1) })));
  const extra = { parse: t.gdscript, resolve: t.resolve, version: t.version, segment: t.segments, tokenize: t.tokens, profile: t.profile, tsquery: t.tsquery, diagnose: t.tables, profile_diff: t.profile_diff }[stage.name];
  if (extra != null) body.append(section("Query trace", el("pre", { class: "small", text: typeof extra === "string" ? extra : JSON.stringify(extra, null, 1) })));
  const ids = ((t.candidate_ids || {}));
  const lists = Object.entries(ids).filter(([, v]) => v[stage.name]).map(([table, v]) => `${table}: ${v[stage.name].length} records`);
  if (lists.length) body.append(section("Candidate lists", el("p", { text: lists.join(" · ") })));
  container.replaceChildren(el("div", { class: "dhead" }, el("b", { text: "stage " + stage.name })), body);
}
