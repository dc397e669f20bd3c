// The console's entry: session, routing (one HTML shell for every /ui/ path), the live
// signal and keyboard shortcuts. Pages live in sandboxes.js, lists.js and sandbox.js.
import { setCsrf, h, toast } from "./lib.js";
import { approvalsPage, poolsPage } from "./lists.js";
import { sandboxesPage } from "./sandboxes.js";
import { sandboxPage } from "./sandbox.js";

const main = document.getElementById("main");
let me = null;
let current = null; // {refresh(), stop()}

async function session() {
  const r = await fetch("/ui/api/session", { credentials: "same-origin" });
  if (!r.ok) return null;
  return r.json();
}

function loginPage(message) {
  document.getElementById("nav").hidden = true;
  const token = h("input", {
    type: "password",
    id: "token",
    name: "token",
    autocomplete: "off",
    placeholder: "bearer token",
    "aria-label": "bearer token",
    autofocus: true,
  });
  const err = h("p", { class: "error", id: "login-error" }, message || "");
  const form = h(
    "form",
    { id: "login", class: "login" },
    h("h1", {}, "Log in to Cleanroom"),
    h("p", { class: "muted" }, "Paste an API token, or run ", h("code", {}, "cleanroom ui"), " on the server's host for a one-time link."),
    token,
    h("button", { type: "submit" }, "Log in"),
    err,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    await login({ token: token.value });
  });
  main.replaceChildren(form);
  token.focus();
}

async function login(body) {
  const r = await fetch("/ui/api/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  if (!r.ok) {
    let v = {};
    try {
      v = await r.json();
    } catch (_) {}
    const msg = (v.error && v.error.message) || `login refused (${r.status})`;
    loginPage(msg);
    return;
  }
  const next = new URLSearchParams(location.search).get("next");
  history.replaceState(null, "", next && next.startsWith("/ui/") ? next : "/ui/");
  await start();
}

function go(path) {
  history.pushState(null, "", path);
  route();
}

function route() {
  if (current && current.stop) current.stop();
  current = null;
  const p = location.pathname;
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.getAttribute("href") === p || (p.startsWith("/ui/sandboxes/") && a.getAttribute("href") === "/ui/"));
  }
  const ctx = { me, main, go };
  let m;
  if (p === "/ui" || p === "/ui/") current = sandboxesPage(ctx);
  else if (p === "/ui/approvals") current = approvalsPage(ctx);
  else if (p === "/ui/pools") current = poolsPage(ctx);
  else if ((m = p.match(/^\/ui\/sandboxes\/([A-Za-z0-9_-]+)$/))) current = sandboxPage(ctx, m[1]);
  else main.replaceChildren(h("p", {}, "No such page. ", h("a", { href: "/ui/", "data-nav": true }, "Sandboxes")));
}

// The live signal: the server says "something changed"; the page re-reads what it shows
// through the API. Reconnects on its own (EventSource).
let refreshing = false;
let again = false;
async function refresh() {
  if (!current || !current.refresh) return;
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = true;
  try {
    await current.refresh();
  } catch (e) {
    if (e && e.status === 401) location.assign("/ui/login");
  } finally {
    refreshing = false;
    if (again) {
      again = false;
      refresh();
    }
  }
}

function live() {
  const dot = document.getElementById("live");
  const es = new EventSource("/ui/api/live");
  es.addEventListener("change", () => refresh());
  es.addEventListener("tick", () => refresh());
  es.onopen = () => dot.classList.add("on");
  es.onerror = () => dot.classList.remove("on");
}

async function logout() {
  await fetch("/ui/api/logout", {
    method: "POST",
    headers: { "x-csrf-token": me.csrf },
    credentials: "same-origin",
  });
  location.assign("/ui/login");
}

let pendingG = false;
function keys(e) {
  const t = e.target;
  const typing = t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT");
  const help = document.getElementById("help");
  if (e.key === "Escape") {
    help.hidden = true;
    if (typing) t.blur();
    return;
  }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (pendingG) {
    pendingG = false;
    const to = { s: "/ui/", a: "/ui/approvals", p: "/ui/pools" }[e.key];
    if (to) {
      e.preventDefault();
      go(to);
    }
    return;
  }
  if (e.key === "g") {
    pendingG = true;
    setTimeout(() => (pendingG = false), 1000);
    return;
  }
  if (e.key === "?") {
    help.hidden = !help.hidden;
    return;
  }
  if (e.key === "/") {
    const f = document.querySelector("[data-filter]");
    if (f) {
      e.preventDefault();
      f.focus();
    }
    return;
  }
  if (e.key === "j" || e.key === "k") {
    const rows = [...document.querySelectorAll("[data-row]")];
    if (!rows.length) return;
    const i = rows.indexOf(document.activeElement);
    const n = e.key === "j" ? Math.min(rows.length - 1, i + 1) : Math.max(0, i - 1);
    rows[i < 0 ? 0 : n].focus();
    e.preventDefault();
    return;
  }
  if (current && current.key) current.key(e);
}

async function start() {
  me = await session();
  if (!me) {
    location.assign(`/ui/login?next=${encodeURIComponent(location.pathname)}`);
    return;
  }
  setCsrf(me.csrf);
  document.getElementById("nav").hidden = false;
  document.getElementById("who").textContent = `${me.principal}${me.admin ? " (admin)" : ""}`;
  const out = document.getElementById("logout");
  out.hidden = false;
  out.onclick = logout;
  live();
  route();
}

document.addEventListener("click", (e) => {
  const a = e.target.closest && e.target.closest("a[data-nav]");
  if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
  e.preventDefault();
  go(a.getAttribute("href"));
});
document.addEventListener("keydown", keys);
window.addEventListener("popstate", route);
window.addEventListener("error", (e) => toast(String(e.message), true));

if (location.pathname === "/ui/login") {
  const code = new URLSearchParams(location.search).get("code");
  if (code) {
    // Spend the one-time code at once, and drop it from the address bar and history.
    history.replaceState(null, "", "/ui/login");
    login({ code });
  } else {
    loginPage("");
  }
} else {
  start();
}

