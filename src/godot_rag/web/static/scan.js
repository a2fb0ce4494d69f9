// The scan view: start a scan job (a zip upload or a server-side folder), follow its progress, then
// files -> chunks -> findings. A click on a chunk opens it in the one-chunk debugger at `/`.
// Every string from the project or the server is inserted as text (textContent), never as HTML.
"use strict";

const CHUNK_KEY = "godot-rag.chunk";
const CHUNK_META_KEY = "godot-rag.chunk.meta";
const MAX_URL_CHUNK = 6000;  // longer chunks travel through sessionStorage only
const $ = (sel) => document.querySelector(sel);
let job = null;
let selectedFile = null;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

function setStatus(text, isError) {
  const s = $("#status");
  s.textContent = text;
  s.className = isError ? "error" : "";
}

async function startScan(ev) {
  ev.preventDefault();
  const file = $("#zip").files[0];
  const path = $("#path").value.trim();
  const options = { strategy: $("#strategy").value };
  if ($("#godot-version").value) options.godot_version = $("#godot-version").value;
  if ($("#addons").checked) options.include_addons = true;
  let resp;
  try {
    if (file) {
      const q = new URLSearchParams(Object.entries(options).map(([k, v]) => [k, String(v)]));
      resp = await fetch("/api/scan?" + q.toString(), { method: "POST", headers: { "Content-Type": "application/zip" }, body: file });
    } else if (path) {
      resp = await fetch("/api/scan", { method: "POST", headers: { "Content-Type": "application/json" },
                                        body: JSON.stringify({ path, ...options }) });
    } else {
      setStatus("choose a project zip or type a folder on the server", true);
      return;
    }
  } catch (e) {
    setStatus("the server did not answer: " + e, true);
    return;
  }
  const body = await resp.json().catch(() => ({}));
  if (resp.status !== 202) {
    setStatus(`${resp.status}: ${body.error || resp.statusText}`, true);
    return;
  }
  history.replaceState(null, "", "/scan?job=" + encodeURIComponent(body.job_id));
  follow(body.job_id);
}

async function follow(jobId) {
  $("#layout").hidden = true;
  $("#summary").replaceChildren();
  $("#progress-box").hidden = false;
  setStatus("queued");
  for (;;) {
    let resp;
    try {
      resp = await fetch(`/api/scan/${encodeURIComponent(jobId)}?results=false`);
    } catch (e) {
      setStatus("the server did not answer: " + e, true);
      return;
    }
    const body = await resp.json().catch(() => ({}));
    if (!resp.ok) { setStatus(`${resp.status}: ${body.error || resp.statusText}`, true); return; }
    const p = body.progress || {};
    $("#progress").value = p.fraction || 0;
    $("#progress-text").textContent = `${p.phase || ""} ${p.done || 0} / ${p.total || 0}`;
    if (body.status === "done") break;
    if (body.status === "error" || body.status === "cancelled") { setStatus(`${body.status}: ${body.error || ""}`, true); return; }
    setStatus(body.status);
    await new Promise((r) => setTimeout(r, 700));
  }
  const resp = await fetch(`/api/scan/${encodeURIComponent(jobId)}`);
  job = await resp.json();
  $("#progress-box").hidden = true;
  setStatus("done");
  render();
}

function sevCounts(counts) {
  const out = [];
  for (const s of ["error", "warning", "info"]) if (counts && counts[s]) out.push(el("span", { class: "sev sev-" + s }, `${counts[s]} ${s}`), " ");
  return out;
}

function render() {
  const s = job.summary;
  const rows = [
    ["Projects", s.projects.map((p) => `${p.dir === "." ? "(root)" : p.dir}: Godot ${p.godot_version_used} (${p.version_source})`).join("; ")],
    ["Files", `${s.files_scanned} scanned of ${s.files_selected}` + (s.unreadable.length ? `; skipped: ${s.unreadable.map((u) => u.file + " (" + u.error + ")").join(", ")}` : "")],
    ["Chunks", `${s.chunks} (${s.computed} computed, ${s.cached} from the cache)`],
    ["Findings", `${s.findings.total}: ` + Object.entries(s.findings.by_severity).map(([k, v]) => `${k} ${v}`).join(", ") + `; migration ${s.findings.migration}`],
    ["Time", `${s.seconds} s`],
  ];
  const links = el("p", {}, "Outputs: ",
    ["report.html", "report.md", "findings.sarif", "findings.jsonl", "chunks.jsonl"].map((n) =>
      [el("a", { href: `/api/scan/${encodeURIComponent(job.job_id)}/${n}`, target: "_blank", rel: "noopener" }, n), " "]));
  $("#summary").replaceChildren(el("table", {}, rows.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))), links);
  const list = $("#files");
  list.replaceChildren();
  job.files.forEach((f, i) => {
    const li = el("li", { dataset: { index: String(i) }, onclick: () => showFile(i) },
      f.file, " ", el("span", { class: "count" }, `${f.chunks.length} chunks`), " ", sevCounts(f.findings),
      f.error ? el("span", { class: "muted" }, " skipped: " + f.error) : null,
      f.chunker === "line-fallback" ? el("span", { class: "muted" }, " (cut by lines)") : null);
    list.append(li);
  });
  $("#layout").hidden = false;
  const first = job.files.findIndex((f) => Object.values(f.findings || {}).some((n) => n > 0));
  if (job.files.length) showFile(first >= 0 ? first : 0);
}

function showFile(i) {
  selectedFile = i;
  for (const li of document.querySelectorAll("#files li")) li.classList.toggle("sel", li.dataset.index === String(i));
  const f = job.files[i];
  $("#chunks-title").textContent = `Chunks of ${f.file}`;
  const ul = $("#chunks");
  ul.replaceChildren();
  f.chunks.forEach((c) => {
    const head = el("div", { class: "chunk-head" },
      el("b", {}, `lines ${c.start_line}-${c.end_line}`), el("span", { class: "muted" }, c.kind + (c.name ? " " + c.name : "") + (c.parts ? ` (part ${c.part}/${c.parts})` : "")),
      el("span", { class: "count" }, `${c.records.length} records`),
      c.findings.length ? el("span", { class: "count" }, `${c.findings.length} findings`) : null,
      el("button", { class: "open", type: "button", title: "Open this chunk in the one-chunk debugger", onclick: () => openChunk(f, c) }, "Open in debugger"));
    const findings = c.findings.map((x) => el("div", { class: "finding" },
      el("span", { class: "sev sev-" + x.severity }, x.severity), " ", `${x.line}:${x.column} `, el("code", {}, x.label),
      x.mappings.length ? ` ${x.mappings[0].source_api} -> ${x.mappings[0].target_api}` : "", " ", el("span", { class: "muted" }, x.evidence.code)));
    const item = el("li", { class: "chunk", dataset: { start: String(c.start_line) } }, head,
      el("pre", { class: "code", title: "click to open in the debugger", onclick: () => openChunk(f, c) }, c.chunkText),
      c.error ? el("div", { class: "muted" }, "not retrieved: " + c.error) : null, findings);
    ul.append(item);
  });
}

function openChunk(f, c) {
  const strategy = (job.options && job.options.strategy) || "F";
  try {
    sessionStorage.setItem(CHUNK_KEY, c.chunkText);
    sessionStorage.setItem(CHUNK_META_KEY, JSON.stringify({ file: f.file, start_line: c.start_line, end_line: c.end_line,
      godot_version: c.godot_version, extends: c.extends, strategy, job_id: job.job_id }));
  } catch (e) { /* storage full or off: the URL still carries short chunks */ }
  const q = new URLSearchParams({ strategy });
  if (encodeURIComponent(c.chunkText).length <= MAX_URL_CHUNK) q.set("chunk", c.chunkText);
  else q.set("from", "scan");
  location.href = "/?" + q.toString();
}

$("#scan-form").addEventListener("submit", startScan);
const initial = new URLSearchParams(location.search).get("job");
if (initial) follow(initial);
