// DOM helpers. Every piece of chunk or record text goes in through textContent / text nodes:
// nothing from the server or the user is ever parsed as HTML.

export const $ = (id) => document.getElementById(id);

export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k.startsWith("on") && typeof v === "function") node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const c of children.flat()) {
    if (c == null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function num(x, digits = 3) {
  if (x == null || Number.isNaN(Number(x))) return "–";
  const v = Number(x);
  if (Number.isInteger(v)) return String(v);
  return v.toFixed(digits).replace(/0+$/, "").replace(/\.$/, "");
}

export function short(x) {  // scores in a compact cell: 2 significant decimals
  if (x == null) return "";
  const v = Number(x);
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

export function table(headers, rows, cls) {
  const t = el("table", { class: cls || "kv" });
  t.append(el("tr", {}, ...headers.map((h) => el("th", { text: h }))));
  for (const r of rows) t.append(el("tr", {}, ...r.map((c) => (c instanceof Node ? el("td", {}, c) : el("td", { text: c == null ? "" : String(c) })))));
  return t;
}

export function chip(text, cls, title) {
  return el("span", { class: "chip " + (cls || ""), text, title });
}

export function download(name, text, type) {
  const blob = new Blob([text], { type: type || "application/json" });
  const a = el("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(a);
  a.click();
  a.remove();
}

export function pageOf(id) {
  const i = id.indexOf("#");
  return i >= 0 ? id.slice(0, i) : id;
}
