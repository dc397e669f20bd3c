// The sandboxes page: a live list that costs what changed. The first load is one
// ListSandboxes; each live signal after it asks only for what changed since the previous
// answer (`changedSince` = its `cursor`) and merges it: changed rows are rebuilt, rows that
// no longer match are dropped. Only the first screenful of rows is in the page; more are
// added as the list scrolls or `j` reaches its end. `SandboxSet` is shared with the
// approvals queue, which follows the sandboxes that may ask. Admins see each row's owner
// and may filter by it.
import { call, h, ago, enumName, toast, bytes } from "./lib.js";

const STATUS = "SANDBOX_STATUS_";
// Rows put in the page at once: a laptop screen's worth and then some.
const PAGE = 100;

// The sandboxes a ListSandboxes request matches, kept current by asking for changes only.
// `sync()` is single-flight: a call while one runs waits for it and then asks once more.
export class SandboxSet {
  constructor(request) {
    this.request = request; // () => ListSandboxesRequest without changedSince
    this.byId = new Map();
    this.cursor = null;
    this.gen = 0;
    this.running = null;
    this.again = false;
  }

  // Forget everything (the filter changed): the next sync lists anew.
  reset() {
    this.gen++;
    this.cursor = null;
    this.byId.clear();
  }

  async sync() {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.once();
        } while (this.again);
      } finally {
        this.running = null;
      }
    })();
    return this.running;
  }

  async once() {
    const gen = this.gen;
    const req = this.request();
    if (this.cursor) req.changedSince = this.cursor;
    const r = await call("SandboxService", "ListSandboxes", req);
    if (gen !== this.gen) return; // reset while asking: the next sync lists anew
    if (r.complete || !this.cursor) this.byId.clear();
    for (const s of r.sandboxes || []) this.byId.set(s.sandboxId, s);
    for (const id of r.unlistedSandboxIds || []) this.byId.delete(id);
    this.cursor = r.cursor || null;
  }

  // Newest first.
  list() {
    return [...this.byId.values()].sort((a, b) => String(b.createdAt).localeCompare(String(a.createdAt)));
  }
}

function labelText(labels) {
  return Object.entries(labels || {})
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}

function parseLabels(text) {
  const out = {};
  for (const part of text.split(/[\s,]+/).filter(Boolean)) {
    const i = part.indexOf("=");
    if (i > 0) out[part.slice(0, i)] = part.slice(i + 1);
  }
  return out;
}

export function sandboxesPage({ me, main, go }) {
  const filter = h("input", {
    id: "label-filter",
    "data-filter": true,
    placeholder: "labels: key=value …",
    "aria-label": "label filter",
    value: sessionStorage.getItem("labels") || "",
  });
  const owner = h("input", {
    id: "owner-filter",
    placeholder: "owner",
    "aria-label": "owner filter",
    value: sessionStorage.getItem("owner") || "",
  });
  const mine = h("input", { type: "checkbox", id: "only-own" });
  const stopped = h("input", { type: "checkbox", id: "include-stopped" });
  const count = h("span", { class: "muted", id: "count" });
  const body = h("tbody", { id: "sandboxes" });
  const table = h(
    "table",
    { class: "grid" },
    h("thead", {}, h("tr", {}, h("th", {}, "sandbox"), me.admin ? h("th", {}, "owner") : null, h("th", {}, "status"), h("th", {}, "runtime"), h("th", {}, "usage"), h("th", {}, "labels"), h("th", {}, "image"), h("th", {}, "created"))),
    body,
  );
  const tools = h(
    "div",
    { class: "tools" },
    filter,
    me.admin ? owner : null,
    me.admin ? h("label", {}, mine, " only mine") : null,
    h("label", {}, stopped, " stopped too"),
    count,
  );
  main.replaceChildren(h("h1", {}, "Sandboxes"), tools, table);
  // Admins may list one owner's sandboxes (the API refuses anyone else another owner).
  const set = new SandboxSet(() => ({
    includeStopped: stopped.checked,
    onlyOwn: mine.checked,
    labels: parseLabels(filter.value),
    owner: me.admin ? owner.value.trim() : "",
  }));
  const cols = me.admin ? 8 : 7;
  const usageCol = me.admin ? 4 : 3;
  const usage = new Map();
  const cache = new Map(); // sandbox id -> {sig, tr}
  let shown = PAGE;
  let lastUsage = 0;
  let alive = true;

  // The row after the last one shown: scrolling to it, or `j` onto it, shows more.
  const more = h("tr", { id: "more", tabindex: 0, "data-row": true }, h("td", { colspan: cols, class: "muted" }, ""));
  const showMore = (focusNext) => {
    const first = shown;
    shown += PAGE;
    render();
    if (focusNext && body.children[first]) body.children[first].focus();
  };
  more.addEventListener("focus", () => showMore(true));
  const seen = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && showMore(false));
  seen.observe(more);

  function rowOf(s) {
    const sig = JSON.stringify([s.status, s.owner, s.labels, s.egressAsks, s.backend, s.imageRef, usage.get(s.sandboxId) || ""]);
    const kept = cache.get(s.sandboxId);
    if (kept && kept.sig === sig) return kept.tr;
    const tr = h(
      "tr",
      { tabindex: 0, "data-row": true, "data-id": s.sandboxId, class: `st-${enumName(s.status, STATUS)}` },
      h("td", {}, h("a", { href: `/ui/sandboxes/${encodeURIComponent(s.sandboxId)}`, "data-nav": true, tabindex: -1 }, s.sandboxId)),
      me.admin ? h("td", { class: "owner" }, s.owner || "") : null,
      h("td", {}, h("span", { class: `status ${enumName(s.status, STATUS)}` }, enumName(s.status, STATUS)), s.egressAsks ? h("span", { class: "tag", title: "may ask for egress" }, "asks") : null),
      h("td", {}, s.backend || ""),
      h("td", { class: "num" }, usage.get(s.sandboxId) || ""),
      h("td", { class: "labels" }, labelText(s.labels)),
      h("td", { class: "muted" }, s.imageRef || "host"),
      h("td", { title: s.createdAt || "" }, ago(s.createdAt)),
    );
    cache.set(s.sandboxId, { sig, tr });
    return tr;
  }

  // Rows are kept by id and rebuilt only when what they show changed; only the first
  // `shown` are in the page.
  function render() {
    const list = set.list();
    const focused = document.activeElement && document.activeElement.dataset.id;
    const rows = list.slice(0, shown).map(rowOf);
    for (const k of cache.keys()) if (!set.byId.has(k)) cache.delete(k);
    if (list.length > shown) {
      more.firstChild.textContent = `${list.length - shown} more (scroll, or j)`;
      rows.push(more);
    }
    const same = rows.length === body.children.length && rows.every((r, i) => body.children[i] === r);
    if (!same) body.replaceChildren(...rows);
    count.textContent = `${list.length} sandbox${list.length === 1 ? "" : "es"}`;
    // A rebuilt row took the focus with it: give it to its successor.
    if (focused && !body.contains(document.activeElement)) {
      const again = body.querySelector(`tr[data-id="${CSS.escape(focused)}"]`);
      if (again) again.focus();
    }
    return list;
  }

  // Usage is GetSandbox's (ListSandboxes leaves it out): the first READY rows only, at most
  // every 4 s.
  async function fillUsage(list) {
    if (Date.now() - lastUsage < 4000) return;
    lastUsage = Date.now();
    const ids = list
      .slice(0, shown)
      .filter((s) => enumName(s.status, STATUS) === "ready")
      .slice(0, 20)
      .map((s) => s.sandboxId);
    await Promise.all(
      ids.map(async (id) => {
        try {
          const g = await call("SandboxService", "GetSandbox", { sandboxId: id });
          const u = g.sandbox && g.sandbox.usage;
          if (u) usage.set(id, `${(Number(u.cpuUsec || 0) / 1e6).toFixed(1)} cpu·s · ${bytes(u.memoryBytes)}`);
        } catch (_) {}
      }),
    );
    if (!alive) return;
    for (const tr of body.children) {
      const u = usage.get(tr.dataset.id);
      if (u && tr.dataset.id) tr.children[usageCol].textContent = u;
    }
  }

  async function refresh() {
    await set.sync();
    if (!alive) return;
    fillUsage(render());
  }

  const again = () => {
    sessionStorage.setItem("labels", filter.value);
    sessionStorage.setItem("owner", owner.value);
    set.reset();
    shown = PAGE;
    refresh().catch((e) => toast(`${e.code}: ${e.message}`, true));
  };
  filter.addEventListener("change", again);
  owner.addEventListener("change", again);
  mine.addEventListener("change", again);
  stopped.addEventListener("change", again);
  body.addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-id]");
    if (tr && !e.target.closest("a")) go(`/ui/sandboxes/${encodeURIComponent(tr.dataset.id)}`);
  });
  again();
  return {
    refresh,
    stop: () => {
      alive = false;
      seen.disconnect();
    },
    key: (e) => {
      const row = document.activeElement && document.activeElement.closest("tr[data-id]");
      if (row && e.key === "Enter") {
        e.preventDefault();
        go(`/ui/sandboxes/${encodeURIComponent(row.dataset.id)}`);
      }
    },
  };
}
