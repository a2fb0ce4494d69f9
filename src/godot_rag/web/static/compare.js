// Compare A-F: rows are records, columns are strategies; each cell is the final rank or the stage that lost
// the record. A strategy that cannot run keeps its column, with the reason and the server command.
import { el, pageOf } from "./dom.js";
import { TABLES, key, outcomeText } from "./journey.js";

export function renderCompare(box, runs, ctx) {
  // runs: [{strategy, journey | null, error | null, unavailable | null}]
  const { gold, descriptions, onPick } = ctx;
  box.replaceChildren();
  box.append(el("p", { class: "note", text: "Each cell: the record's final rank under that strategy, or the stage where it was lost. " +
    "Rows: every record some strategy returned, and those a validator rejected or cut after accepting" + (gold && gold.active() ? ", and the records of the eval line's pages (★ relevant, ⚠ demoted)." : ".") }));
  for (const table of TABLES) {
    const rows = new Map();
    for (const run of runs) {
      if (!run.journey) continue;
      for (const rec of run.journey.records) {
        if (rec.table !== table) continue;
        const marked = gold && gold.mark(rec);
        // returned somewhere, or accepted-then-cut / rejected with its record in the answer (not every record past k)
        if (rec.outcome === "returned" || (rec.cand && ["cut", "rejected"].includes(rec.outcome)) || marked) rows.set(rec.id, rows.get(rec.id) || rec);
      }
    }
    if (gold && gold.active() && table === "docs_chunks") for (const page of gold.pages()) {
      if (![...rows.keys()].some((id) => pageOf(id) === page)) rows.set(page + "#…", { table, id: page + "#…", page, placeholder: true });
    }
    if (gold && gold.active() && table === "api_mapping") for (const mid of gold.mappingIds()) if (!rows.has(mid)) rows.set(mid, { table, id: mid, placeholder: true });
    const score = (id) => {
      let s = 0, best = 1e9;
      for (const run of runs) {
        const r = run.journey && run.journey.byKey.get(key(table, id));
        if (r && r.outcome === "returned") { s++; best = Math.min(best, r.finalRank); }
      }
      return [s, best];
    };
    const ordered = [...rows.keys()].sort((a, b) => {
      const [sa, ba] = score(a), [sb, bb] = score(b);
      return sb - sa || ba - bb || (a < b ? -1 : 1);
    });
    const t = el("table", { class: "cmp", "aria-label": "compare " + table });
    const head = el("tr", {}, el("th", { class: "rec", text: `${table} (${ordered.length})` }));
    for (const run of runs) {
      const th = el("th", { class: "strat", title: descriptions[run.strategy] || "" }, el("div", { class: "sl", text: run.strategy }));
      if (run.unavailable) th.append(el("div", { class: "why", text: "cannot run: " + run.unavailable.reason }), el("code", { class: "cmd", text: run.unavailable.enable }));
      else if (run.error) th.append(el("div", { class: "why", text: run.error }));
      else if (run.journey && run.journey.result.trace.llm_fallback) th.append(el("div", { class: "why", text: run.journey.result.trace.llm_fallback }));
      head.append(th);
    }
    t.append(head);
    if (!ordered.length) t.append(el("tr", {}, el("td", { class: "muted", colspan: String(runs.length + 1), text: "no strategy returned, cut or rejected a record of this table" })));
    for (const id of ordered) {
      const sample = rows.get(id);
      const gm = gold && gold.mark(sample);
      const cut = table === "docs_chunks" ? id.lastIndexOf("#") : id.indexOf(":") + 1;
      const label = el("td", { class: "rec", title: id }, el("div", { class: "labw" }, gm ? el("span", { class: "gm " + gm.cls, text: gm.icon + " " }) : null,
        el("span", { class: "rid" + (table === "docs_chunks" ? "" : " long") }, el("span", { class: "rp", text: cut > 0 ? id.slice(0, cut) : id }), cut > 0 ? el("span", { class: "rn", text: id.slice(cut) }) : null)));
      const tr = el("tr", { class: gm ? "g-" + gm.cls : "" }, label);
      for (const run of runs) {
        const td = el("td");
        if (!run.journey) { td.textContent = "—"; td.className = "na"; td.title = run.unavailable ? run.unavailable.reason : run.error || ""; tr.append(td); continue; }
        const rec = sample.placeholder && table === "docs_chunks" ? bestOfPage(run.journey, sample.page) : run.journey.byKey.get(key(table, id));
        if (!rec) { td.textContent = "not retrieved"; td.className = "unseen"; tr.append(td); continue; }
        td.textContent = outcomeText(rec) + (sample.placeholder && rec.id ? " " + rec.id.slice(rec.id.indexOf("#")) : "");
        td.className = "o-" + rec.outcome;
        td.title = rec.outcome === "returned" ? `returned at #${rec.finalRank}` : rec.reason || "";
        if (gm && gm.cls === "demoted" && rec.outcome === "returned") { td.classList.add("wrong"); td.textContent += " ⚠ demoted page accepted"; }
        if (gm && gm.cls === "relevant" && rec.outcome !== "returned") td.classList.add("missed");
        if (onPick && rec.id) {
          td.tabIndex = 0;
          td.addEventListener("click", () => onPick(run.strategy, table, rec.id));
          td.addEventListener("keydown", (e) => { if (e.key === "Enter") onPick(run.strategy, table, rec.id); });
        }
        tr.append(td);
      }
      t.append(tr);
    }
    box.append(el("h3", { class: "ctitle", text: table }), t);
  }
}

function bestOfPage(journey, page) {
  const recs = journey.records.filter((r) => r.table === "docs_chunks" && pageOf(r.id) === page);
  return recs.sort((a, b) => (a.outcome === "returned" ? 0 : 1) - (b.outcome === "returned" ? 0 : 1) || (a.finalRank || 1e9) - (b.finalRank || 1e9))[0] || null;
}
