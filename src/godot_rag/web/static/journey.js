// The journey of every record through one strategy's stages, computed from one POST /api/retrieve answer:
// the candidates' own traces (results, rejected, cut) and trace.candidate_ids (table -> stage -> ranked ids).
import { pageOf } from "./dom.js";

export const TABLES = ["docs_chunks", "api_mapping", "label_prototypes"];
// Which stages say something about each record (a column of the matrix), and how: each stage's `column` in
// GET /api/strategies (label, unit, score field, unit_scale, lossy: a record can be gone after it, source: a
// record absent here was simply not found by it). A stage without one is query-level.

export const OUTCOME = { returned: 0, cut: 1, rejected: 2, lost: 3, unseen: 4 };

export function key(table, id) { return table + "\u0000" + id; }

function unique(list) { return [...new Set(list)]; }

/** The strategy's stage columns, in order, with each stage's log (ms, summary). */
export function stagesOf(result, stageLists) {
  const t = result.trace || {};
  const about = {}, column = {};
  for (const s of ((stageLists || {})[result.strategy] || {}).stages || []) { about[s.name] = s.about; column[s.name] = s.column || null; }
  const logs = {};
  for (const s of t.stages || []) logs[s.stage] = s;
  const names = unique(t.stage_list && t.stage_list.length ? t.stage_list : Object.keys(about));
  return names.map((name) => ({
    name, about: about[name] || "", ms: logs[name] ? logs[name].ms : null, info: logs[name] ? logs[name].info : {},
    record: !!column[name], column: column[name] || null,
  }));
}

/** Every record any stage saw, per table, with its cell at every stage, where it was lost and why. */
export function buildJourney(result, stageLists) {
  const stages = stagesOf(result, stageLists);
  const columns = stages.filter((s) => s.record);
  const ids = (result.trace || {}).candidate_ids || {};
  const cands = new Map();
  const place = (list, where) => (list || []).forEach((c, i) => {
    if (!cands.has(key(c.table, c.id))) cands.set(key(c.table, c.id), { cand: c, where, index: i });
  });
  place(result.results, "returned");
  place(result.cut, "cut");
  place(result.rejected, "rejected");
  const tables = (result.config && result.config.tables) || TABLES;
  const records = [];
  for (const table of tables) {
    const lists = ids[table] || {};
    const rankIn = {};
    for (const [stage, list] of Object.entries(lists)) rankIn[stage] = new Map(list.map((id, i) => [id, i + 1]));
    const seen = new Set();
    for (const list of Object.values(lists)) list.forEach((id) => seen.add(id));
    for (const c of [...(result.results || []), ...(result.cut || []), ...(result.rejected || [])]) if (c.table === table) seen.add(c.id);
    for (const id of seen) records.push(journeyOf(table, id, cands.get(key(table, id)), lists, rankIn, columns, result));
  }
  const maxima = columnMaxima(records, columns);
  for (const r of records) for (const col of columns) {
    const cell = r.cells[col.name];
    if (cell && cell.score != null && maxima[col.name]) cell.bar = Math.max(0, Math.min(1, cell.score / maxima[col.name]));
  }
  for (const col of columns) {
    col.used = records.some((r) => r.cells[col.name] && r.cells[col.name].present);
    col.off = !col.used || !!(col.info && col.info.skipped);
  }
  records.sort(compareRecords);
  const byKey = new Map(records.map((r) => [key(r.table, r.id), r]));
  return { result, strategy: result.strategy, stages, columns, records, byKey, tables };
}

function columnMaxima(records, columns) {
  const out = {};
  for (const col of columns) {
    if (col.column.unit_scale) { out[col.name] = 1; continue; }
    let m = 0;
    for (const r of records) { const c = r.cells[col.name]; if (c && c.score != null) m = Math.max(m, Math.abs(c.score)); }
    out[col.name] = m;
  }
  return out;
}

function compareRecords(a, b) {
  if (a.table !== b.table) return TABLES.indexOf(a.table) - TABLES.indexOf(b.table);
  if (OUTCOME[a.outcome] !== OUTCOME[b.outcome]) return OUTCOME[a.outcome] - OUTCOME[b.outcome];
  if (a.outcome === "lost" && a.lostIndex !== b.lostIndex) return b.lostIndex - a.lostIndex;  // lost later first
  return (a.sortRank ?? 1e9) - (b.sortRank ?? 1e9) || (a.id < b.id ? -1 : 1);
}

function cellOf(col, info, listRank, cand) {
  const stage = col.name;
  // {present, rank, score, text, title, badge, verdict}
  if (!info && listRank == null) return { present: false };
  const cell = { present: true, rank: info && info.rank != null ? info.rank : listRank, score: null, title: "" };
  if (!info) { cell.idsOnly = true; cell.title = `#${listRank} (rank only: the response carries per-stage scores for the returned, rejected and cut records)`; return cell; }
  switch (stage) {
    case "tsquery": cell.score = info.ts_rank_cd; cell.title = `ts_rank_cd ${info.ts_rank_cd}`; break;
    case "bm25": cell.score = info.score; cell.segment = info.text || 0;
      cell.title = `BM25 ${info.score}, rank ${info.rank}` + (info.text ? ` in segment ${info.text} (not found by the whole chunk)` : ""); break;
    case "embedding": cell.score = info.cosine; cell.title = `cosine ${info.cosine}, rank ${info.rank}`; break;
    case "union": cell.rank = listRank; cell.badge = info.source; cell.title = "found by " + info.source +
      Object.entries(info.inputs || {}).map(([n, e]) => ` · ${n} #${e.rank} (${e.score})`).join(""); break;
    case "fuse": cell.score = info.score; cell.title = `${info.method} fused score ${info.score}`; break;
    case "codematch": cell.score = info.ratio; cell.title = `code-clone ratio ${info.ratio}: ${info.score_before} × (1 + ${info.alpha} × ${info.ratio}) = ${info.score}`; break;
    case "merge": cell.score = info.score; cell.title = `best rank ${info.best_rank} over the whole chunk (#${info.whole_rank ?? "–"}) and its segments (` +
      info.segment_ranks.map((r) => (r == null ? "–" : "#" + r)).join(", ") + `) → merged #${info.rank}`; break;
    case "rerank": cell.score = info.score; cell.move = info.rank_change;
      cell.title = `${info.backend}: model ${info.model_score}, #${info.rank_before ?? "–"} → #${info.rank}`; break;
    case "api": cell.badge = "api"; cell.score = info.score; cell.title = `api source: ${info.uses.map((u) => u.api + " (line " + u.line + ")").join(", ")}; +${info.weight}`; break;
    case "validate": cell.score = info.confidence; cell.verdict = info.verdict;
      cell.title = `${info.verdict}, confidence ${info.confidence}` + (info.reasons.length ? ": " + info.reasons.join("; ") : ""); break;
    case "check": cell.badge = "check"; cell.verdict = "accept";
      cell.title = "API check: " + info.findings.map((f) => `${f.kind} at line ${f.line}: ${f.api} (${f.rule})`).join("; "); break;
    case "judge": cell.score = info.confidence; cell.verdict = info.accepted ? "accept" : "reject";
      cell.title = `judge ${info.answer} P(yes) ${info.p_yes}`; break;
    case "rank": cell.score = info.p; cell.verdict = info.accepted ? "accept" : "reject";
      cell.title = `ranker P(direct) ${info.p} ${info.accepted ? "≥" : "<"} ${info.threshold}` + (info.kept_out_by ? `, kept out most by ${info.kept_out_by}` : ""); break;
    case "score": cell.score = info.score; cell.title = `${info.score_before} × (0.5 + 0.5 × ${info.confidence}) = ${info.score}`; break;
    case "cut": cell.rank = info.kept ? info.rank : null; cell.title = info.kept ? `kept: rank ${info.rank}${info.group ? " (" + info.group + ")" : ""}` : `cut: position ${info.position} > k ${info.k}`; break;
    default:  // a stage the page has no words for: its score field, and its info as the title
      if (col.column.score) cell.score = info[col.column.score];
      cell.title = Object.entries(info).filter(([, v]) => typeof v !== "object").map(([k, v]) => `${k} ${v}`).join(" · ");
  }
  return cell;
}

function journeyOf(table, id, placed, lists, rankIn, columns, result) {
  const cand = placed ? placed.cand : null;
  const trace = cand ? cand.trace || {} : {};
  const cells = {};
  let seen = false, lost = null, lostIndex = -1, reentered = null, prevRank = null;
  columns.forEach((col, ci) => {
    const stage = col.name;
    const listRank = rankIn[stage] ? rankIn[stage].get(id) ?? null : null;
    const info = trace[stage] || null;
    const cell = cellOf(col, info, listRank, cand);
    // "present" = the record passed this stage; a verdict of reject, or a cut, is a loss at this stage
    let passed = cell.present;
    if (stage === "validate" || stage === "judge" || stage === "rank") {
      if (cell.verdict) passed = cell.verdict === "accept";
      else if (rankIn.validate && stage === "validate") passed = listRank != null;
    }
    if (stage === "cut" && info) passed = info.kept;
    if (stage === "cut" && !info && rankIn.cut) passed = listRank != null;
    if (cell.present && (stage === "codematch" || stage === "merge") && prevRank != null && cell.rank != null) cell.move = prevRank - cell.rank;
    if (cell.rank != null && ["fuse", "codematch", "merge", "rerank"].includes(stage)) prevRank = cell.rank;
    if (passed) {
      // back through another source (the api list), or accepted by the ranker after a rule rejected it
      if (lost && (col.column.source || stage === "rank")) { reentered = stage; lost = null; lostIndex = -1; }
      seen = true;
    } else if (seen && !lost && col.column.lossy && (cell.present || rankIn[stage] || info)) {
      lost = stage; lostIndex = ci;
    } else if (stage === "rank" && cell.present) {
      lost = stage; lostIndex = ci;  // the ranker decides again what a rule rejected: its reject is the one that stands
    }
    cells[stage] = cell;
  });
  const rec = { table, id, cand, cells, lost, lostIndex, reentered, payload: cand ? cand.payload : null };
  // outcome and reason
  if (placed && placed.where === "returned") {
    rec.outcome = "returned"; rec.finalRank = cand.rank; rec.sortRank = cand.rank; rec.group = cand.group;
    rec.lost = null;
  } else if (lost === "cut" || (placed && placed.where === "cut")) {
    rec.outcome = "cut"; rec.lost = "cut";
    const ci = trace.cut;
    rec.reason = ci ? `accepted, but position ${ci.position}${ci.group ? " in " + ci.group : ""} > k ${ci.k}` :
      `not among the first k (${kOf(result, table)}) at the cut`;
    rec.sortRank = ci ? ci.position : lastRank(cells, columns);
  } else if (lost === "validate" || lost === "judge" || lost === "rank" || (placed && placed.where === "rejected")) {
    rec.outcome = "rejected"; rec.lost = lost || "validate";
    // the validator's reason, and the named rule that decided (as retrieve/explain/why.py gives it)
    rec.reason = cand && cand.reason ? cand.reason + (cand.decision ? ` (rule ${cand.decision.rule})` : "") :
      "rejected by the validator (its reasons are not in the response: only the first k rejected records of each table come back)";
    rec.confidence = trace.validate ? trace.validate.confidence : null;
    rec.sortRank = placed && placed.where === "rejected" ? 1000 + placed.index : 5000 + (lastRank(cells, columns) || 0);
  } else if (lost === "shortlist") {
    rec.outcome = "lost";
    const m = cells.merge && cells.merge.present ? cells.merge.rank : lastRank(cells, columns);
    rec.reason = `ranked #${m} before the shortlist; only the first rerank_top (${(result.config || {}).rerank_top}) docs go on to the validator`;
    rec.sortRank = m;
  } else if (lost) {
    rec.outcome = "lost"; rec.reason = `lost at ${lost}`; rec.sortRank = lastRank(cells, columns);
  } else if (!seen) {
    rec.outcome = "unseen"; rec.reason = "no stage saw it"; rec.sortRank = 1e9;
  } else {
    rec.outcome = "lost"; rec.lost = "cut"; rec.reason = "not returned"; rec.sortRank = lastRank(cells, columns);
  }
  if (rec.outcome === "lost" || rec.outcome === "cut" || rec.outcome === "rejected") {
    const col = columns.findIndex((c) => c.name === rec.lost);
    rec.lostIndex = col;
    if (cells[rec.lost]) cells[rec.lost].lost = true;
  }
  return rec;
}

function lastRank(cells, columns) {
  for (let i = columns.length - 1; i >= 0; i--) {
    const c = cells[columns[i].name];
    if (c && c.present && c.rank != null && !["cut"].includes(columns[i].name)) return c.rank;
  }
  return null;
}

function kOf(result, table) { return (result.k || {})[table] ?? (result.config || {}).k; }

export function outcomeText(rec) {
  if (!rec) return "not seen";
  switch (rec.outcome) {
    case "returned": return "#" + rec.finalRank;
    case "cut": return "cut at k";
    case "rejected": return "rejected";
    case "lost": return "✕ " + rec.lost;
    default: return "not seen";
  }
}

/** "Why not this record?": where it was lost, its rank and score at every stage it reached, and the reason. */
export function whyNot(journey, table, id) {
  const rec = journey.byKey.get(key(table, id));
  if (!rec) return null;
  const steps = journey.columns.map((col) => {
    const cell = rec.cells[col.name] || { present: false };
    return { stage: col.name, off: col.off, present: cell.present, rank: cell.rank, score: cell.score, title: cell.title,
      lost: rec.lost === col.name && rec.outcome !== "returned", verdict: cell.verdict, badge: cell.badge, idsOnly: !!cell.idsOnly };
  });
  return { rec, steps };
}

/** Records of one page (docs ids are page#nnn). */
export function recordsOfPage(journey, page) {
  return journey.records.filter((r) => r.table === "docs_chunks" && pageOf(r.id) === page);
}

/** What a record that no stage saw was up against: the sizes of the candidate lists. */
export function unseenReason(journey) {
  const t = journey.result.trace || {};
  const cfg = journey.result.config || {};
  const parts = [];
  const names = journey.columns.map((c) => c.name);
  if (names.includes("bm25")) parts.push(`the top ${cfg.candidates} of BM25`);
  if (names.includes("embedding")) parts.push(`the top ${cfg.candidates} of the embedding`);
  if (names.includes("api")) parts.push("the class-reference entries of the resolved API uses");
  if (names.includes("tsquery")) return "no stage saw it: the tsquery (every token ANDed) did not match it" + (t.tsquery ? ` (${t.tsquery})` : "");
  return "no stage saw it: it was not among " + parts.join(", nor ") + " for this chunk";
}

/** Rank deltas against the previous run of the same chunk and strategy. */
export function deltas(journey, previous) {
  if (!previous) return null;
  const out = new Map();
  for (const rec of journey.records) {
    const old = previous.byKey.get(key(rec.table, rec.id));
    const d = { old: old ? old.finalRank ?? null : undefined, oldOutcome: old ? old.outcome : "unseen", changed: new Set() };
    if (old) for (const col of journey.columns) {
      const a = old.cells[col.name], b = rec.cells[col.name];
      if (!a || !b || !a.present || !b.present) continue;
      if (a.rank !== b.rank || a.verdict !== b.verdict) d.changed.add(col.name);
    }
    if (rec.outcome === "returned" && d.old != null) d.move = d.old - rec.finalRank;
    out.set(key(rec.table, rec.id), d);
  }
  let gone = 0;
  for (const rec of previous.records) if (!journey.byKey.has(key(rec.table, rec.id))) gone++;
  out.gone = gone;
  return out;
}
