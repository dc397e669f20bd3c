// Shared by the console's pages: API calls (the Connect API itself, JSON), DOM building
// without HTML parsing, and sandbox output made inert. Nothing here ever assigns an
// element's inner or outer HTML or builds markup from strings: every value reaches the page as a
// text node.

let csrf = "";

export function setCsrf(token) {
  csrf = token;
}

export class ApiError extends Error {
  constructor(code, message, status) {
    super(message || code);
    this.code = code;
    this.status = status;
  }
}

function headers(contentType) {
  return {
    "Content-Type": contentType,
    "Connect-Protocol-Version": "1",
    "x-csrf-token": csrf,
  };
}

// A unary call: POST /cleanroom.v1.<Service>/<Method> with a JSON body.
export async function call(service, method, body = {}) {
  const r = await fetch(`/cleanroom.v1.${service}/${method}`, {
    method: "POST",
    headers: headers("application/json"),
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  const text = await r.text();
  let v = {};
  try {
    v = text ? JSON.parse(text) : {};
  } catch (_) {
    throw new ApiError("internal", `not JSON (${r.status})`, r.status);
  }
  if (!r.ok) throw errorOf(v, r.status);
  return v;
}

// The stable code of an error answer: the ErrorDetail every API error carries (Connect's
// own code is only its class), or REST's {"error": {...}}.
function errorOf(v, status) {
  const d = (v.details || []).find((x) => x.debug && x.debug.code);
  if (d) return new ApiError(d.debug.code, d.debug.message, status);
  if (v.error && v.error.code) return new ApiError(v.error.code, v.error.message, status);
  return new ApiError(v.code || "unknown", v.message, status);
}

function envelope(obj) {
  const data = new TextEncoder().encode(JSON.stringify(obj));
  const out = new Uint8Array(5 + data.length);
  new DataView(out.buffer).setUint32(1, data.length);
  out.set(data, 5);
  return out;
}

// A server-streaming call (Connect protocol, JSON): `onMessage` for every message; resolves
// when the stream ends, rejects with an ApiError for an error end (or when `signal` aborts).
export async function stream(service, method, body, onMessage, signal) {
  const r = await fetch(`/cleanroom.v1.${service}/${method}`, {
    method: "POST",
    headers: headers("application/connect+json"),
    body: envelope(body),
    credentials: "same-origin",
    signal,
  });
  if (!r.ok) {
    let v = {};
    try {
      v = await r.json();
    } catch (_) {}
    throw errorOf(v, r.status);
  }
  const reader = r.body.getReader();
  let buf = new Uint8Array(0);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const joined = new Uint8Array(buf.length + value.length);
    joined.set(buf);
    joined.set(value, buf.length);
    buf = joined;
    while (buf.length >= 5) {
      const flags = buf[0];
      const len = new DataView(buf.buffer, buf.byteOffset + 1, 4).getUint32(0);
      if (buf.length < 5 + len) break;
      const msg = JSON.parse(new TextDecoder().decode(buf.subarray(5, 5 + len)));
      buf = buf.slice(5 + len);
      if (flags & 2) {
        if (msg.error) throw errorOf(msg.error, 200);
        return;
      }
      onMessage(msg);
    }
  }
}

// h("tr", {class: "x", onclick: f}, child, "text", …): an element; strings become text
// nodes, attributes are set one by one (never parsed as markup).
export function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// Terminal control sequences and other controls out of sandbox output: CSI (colours,
// cursor moves, screen clears), OSC (titles, hyperlinks, clipboard writes), DCS/APC/PM,
// two-byte escapes, C1 controls and every C0 control but tab and newline. What is left is
// shown as text: never interpreted by the terminal-less page, never parsed as HTML.
const CSI = /(?:\x1b\[|\u009b)[0-?]*[ -/]*[@-~]/g;
const OSC = /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?/g;
const STR = /\x1b[PX^_][^\x1b]*(?:\x1b\\)?/g;
const ESC2 = /\x1b[ -/]*[0-~]?/g;
const C1 = /[\u0080-\u009f]/g;
const CTRL = /[\x00-\x08\x0b-\x1f\x7f]/g;

export function inert(text) {
  return text
    .replace(/\r\n/g, "\n")
    .replace(CSI, "")
    .replace(OSC, "")
    .replace(STR, "")
    .replace(ESC2, "")
    .replace(C1, "")
    .replace(CTRL, "");
}

export function b64bytes(b64) {
  const s = atob(b64 || "");
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

export function bytesb64(bytes) {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

export function ago(ts) {
  if (!ts) return "";
  const s = Math.max(0, (Date.now() - Date.parse(ts)) / 1000);
  if (s < 60) return `${Math.floor(s)}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86400)}d ago`;
}

export function bytes(n) {
  n = Number(n || 0);
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${u[i]}`;
}

// SANDBOX_STATUS_READY -> ready
export function enumName(v, prefix) {
  return String(v || "").replace(prefix, "").toLowerCase();
}

export function toast(msg, bad = false) {
  const t = document.getElementById("toast");
  t.textContent = msg;
  t.className = bad ? "show bad" : "show";
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (t.className = ""), 4000);
}
