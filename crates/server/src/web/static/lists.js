// The list pages: sandboxes (live, filterable), the approvals queue (live, answerable)
// and pools (with their hit rate). Each is { refresh(), stop(), key(e) }: refresh is called
// on every live signal and reads through the API as the session's principal.
import { call, h, ago, enumName, toast, bytes } from "./lib.js";

const STATUS = "SANDBOX_STATUS_";

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

function rowKeys(e, open) {
  const row = document.activeElement && document.activeElement.closest("[data-row]");
  if (row && e.key === "Enter") {
    e.preventDefault();
    open(row);
  }
}

export function sandboxesPage({ me, main, go }) {
  const filter = h("input", {
    id: "label-filter",
    "data-filter": true,
    placeholder: "labels: key=value …",
    "aria-label": "label filter",
    value: sessionStorage.getItem("labels") || "",
  });
  const mine = h("input", { type: "checkbox", id: "only-own" });
  const stopped = h("input", { type: "checkbox", id: "include-stopped" });
  const count = h("span", { class: "muted", id: "count" });
  const body = h("tbody", { id: "sandboxes" });
  const table = h(
    "table",
    { class: "grid" },
    h("thead", {}, h("tr", {}, h("th", {}, "sandbox"), h("th", {}, "status"), h("th", {}, "runtime"), h("th", {}, "usage"), h("th", {}, "labels"), h("th", {}, "image"), h("th", {}, "created"))),
    body,
  );
  const tools = h(
    "div",
    { class: "tools" },
    filter,
    me.admin ? h("label", {}, mine, " only mine") : null,
    h("label", {}, stopped, " stopped too"),
    count,
  );
  main.replaceChildren(h("h1", {}, "Sandboxes"), tools, table);
  const usage = new Map();
  const cache = new Map(); // sandbox id -> {sig, tr}
  let lastUsage = 0;
  let alive = true;

  async function fillUsage(ids) {
    // Usage is GetSandbox's (ListSandboxes leaves it out): the first rows only.
    await Promise.all(
      ids.slice(0, 20).map(async (id) => {
        try {
          const g = await call("SandboxService", "GetSandbox", { sandboxId: id });
          const u = g.sandbox && g.sandbox.usage;
          if (u) usage.set(id, `${(Number(u.cpuUsec || 0) / 1e6).toFixed(1)} cpu·s · ${bytes(u.memoryBytes)}`);
        } catch (_) {}
      }),
    );
  }

  async function refresh() {
    const req = { includeStopped: stopped.checked, onlyOwn: mine.checked, labels: parseLabels(filter.value) };
    const r = await call("SandboxService", "ListSandboxes", req);
    if (!alive) return;
    const list = r.sandboxes || [];
    list.sort((a, b) => String(b.createdAt).localeCompare(String(a.createdAt)));
    const focused = document.activeElement && document.activeElement.dataset.id;
    // Rows are kept by id and rebuilt only when what they show changed: with a thousand
    // sandboxes listed, a live update touches the few that did.
    const rows = list.map((s) => {
      const sig = JSON.stringify([s.status, s.labels, s.egressAsks, s.backend, s.imageRef, usage.get(s.sandboxId) || ""]);
      const kept = cache.get(s.sandboxId);
      if (kept && kept.sig === sig) return kept.tr;
      const tr = h(
        "tr",
        { tabindex: 0, "data-row": true, "data-id": s.sandboxId, class: `st-${enumName(s.status, STATUS)}` },
        h("td", {}, h("a", { href: `/ui/sandboxes/${encodeURIComponent(s.sandboxId)}`, "data-nav": true, tabindex: -1 }, s.sandboxId)),
        h("td", {}, h("span", { class: `status ${enumName(s.status, STATUS)}` }, enumName(s.status, STATUS)), s.egressAsks ? h("span", { class: "tag", title: "may ask for egress" }, "asks") : null),
        h("td", {}, s.backend || ""),
        h("td", { class: "num" }, usage.get(s.sandboxId) || ""),
        h("td", { class: "labels" }, labelText(s.labels)),
        h("td", { class: "muted" }, s.imageRef || "host"),
        h("td", { title: s.createdAt || "" }, ago(s.createdAt)),
      );
      cache.set(s.sandboxId, { sig, tr });
      return tr;
    });
    const live = new Set(list.map((s) => s.sandboxId));
    for (const k of cache.keys()) if (!live.has(k)) cache.delete(k);
    const same = rows.length === body.children.length && rows.every((r, i) => body.children[i] === r);
    if (!same) body.replaceChildren(...rows);
    count.textContent = `${list.length} sandbox${list.length === 1 ? "" : "es"}`;
    if (focused) {
      const again = body.querySelector(`tr[data-id="${CSS.escape(focused)}"]`);
      if (again) again.focus();
    }
    // Usage at most every 4 s (it is GetSandbox per row), not on every change.
    if (Date.now() - lastUsage < 4000) return;
    lastUsage = Date.now();
    fillUsage(list.filter((s) => enumName(s.status, STATUS) === "ready").map((s) => s.sandboxId)).then(() => {
      for (const tr of body.children) {
        const u = usage.get(tr.dataset.id);
        if (u) tr.children[3].textContent = u;
      }
    });
  }

  const again = () => {
    sessionStorage.setItem("labels", filter.value);
    refresh().catch((e) => toast(`${e.code}: ${e.message}`, true));
  };
  filter.addEventListener("change", again);
  mine.addEventListener("change", again);
  stopped.addEventListener("change", again);
  body.addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-row]");
    if (tr && !e.target.closest("a")) go(`/ui/sandboxes/${encodeURIComponent(tr.dataset.id)}`);
  });
  again();
  return {
    refresh,
    stop: () => (alive = false),
    key: (e) => rowKeys(e, (row) => go(`/ui/sandboxes/${encodeURIComponent(row.dataset.id)}`)),
  };
}

// Every open ask request the principal may answer, oldest first.
export async function openRequests() {
  const r = await call("SandboxService", "ListSandboxes", {});
  const asking = (r.sandboxes || []).filter((s) => s.egressAsks);
  const lists = await Promise.all(
    asking.map((s) =>
      call("ApprovalService", "ListEgressRequests", { sandboxId: s.sandboxId })
        .then((l) => l.requests || [])
        .catch(() => []),
    ),
  );
  return lists.flat().sort((a, b) => String(a.createdAt).localeCompare(String(b.createdAt)));
}

export async function decide(req, allow, remember) {
  await call("ApprovalService", "DecideEgress", {
    sandboxId: req.sandboxId,
    requestId: req.requestId,
    verdict: allow ? "EGRESS_VERDICT_ALLOW" : "EGRESS_VERDICT_DENY",
    remember: remember ? "EGRESS_REMEMBER_SANDBOX" : "EGRESS_REMEMBER_ONCE",
  });
  toast(`${allow ? "allowed" : "denied"} ${req.host}:${req.port}${remember ? " (remembered)" : ""}`);
}

export function requestRows(list, after) {
  return list.map((q) => {
    const remember = h("input", { type: "checkbox", class: "remember", "aria-label": "remember for the sandbox" });
    const act = (allow) => async () => {
      try {
        await decide(q, allow, remember.checked);
      } catch (e) {
        toast(`${e.code}: ${e.message}`, true);
      }
      after();
    };
    return h(
      "tr",
      { tabindex: 0, "data-row": true, "data-request": q.requestId, "data-sandbox": q.sandboxId },
      h("td", {}, h("a", { href: `/ui/sandboxes/${encodeURIComponent(q.sandboxId)}`, "data-nav": true, tabindex: -1 }, q.sandboxId)),
      h("td", { class: "host" }, `${q.host}:${q.port}`),
      h("td", {}, q.protocol || ""),
      h("td", { title: q.createdAt || "" }, ago(q.createdAt)),
      h("td", { class: "actions" }, h("button", { class: "allow", onclick: act(true) }, "Allow"), h("button", { class: "deny", onclick: act(false) }, "Deny"), h("label", {}, remember, " remember")),
    );
  });
}

function requestKeys(e) {
  const row = document.activeElement && document.activeElement.closest("tr[data-request]");
  if (!row) return;
  if (e.key === "y") row.querySelector("button.allow").click();
  if (e.key === "n") row.querySelector("button.deny").click();
}

export function approvalsPage({ main }) {
  const body = h("tbody", { id: "requests" });
  const empty = h("p", { class: "muted", id: "no-requests" }, "No connection is waiting for an answer.");
  main.replaceChildren(
    h("h1", {}, "Approvals"),
    h("p", { class: "muted" }, "Connections held by an ", h("code", {}, "ask"), " rule until someone answers (y: allow, n: deny)."),
    h("table", { class: "grid" }, h("thead", {}, h("tr", {}, h("th", {}, "sandbox"), h("th", {}, "destination"), h("th", {}, "protocol"), h("th", {}, "asked"), h("th", {}, ""))), body),
    empty,
  );
  let alive = true;
  async function refresh() {
    const list = await openRequests();
    if (!alive) return;
    const focused = document.activeElement && document.activeElement.dataset.request;
    body.replaceChildren(...requestRows(list, refresh));
    empty.hidden = list.length > 0;
    const badge = document.getElementById("ask-count");
    badge.textContent = String(list.length);
    badge.hidden = list.length === 0;
    const f = focused && body.querySelector(`tr[data-request="${CSS.escape(focused)}"]`);
    if (f) f.focus();
  }
  refresh().catch((e) => toast(`${e.code}: ${e.message}`, true));
  return { refresh, stop: () => (alive = false), key: requestKeys };
}

export function poolsPage({ main }) {
  const body = h("tbody", { id: "pools" });
  main.replaceChildren(
    h("h1", {}, "Pools"),
    h("table", { class: "grid" }, h("thead", {}, h("tr", {}, h("th", {}, "pool"), h("th", {}, "ready"), h("th", {}, "warming"), h("th", {}, "claimed"), h("th", {}, "hit rate"), h("th", {}, "claims/min"), h("th", {}, "claim p99"), h("th", {}, "image"))), body),
  );
  let alive = true;
  async function refresh() {
    const r = await call("WarmPoolService", "ListPools", {});
    if (!alive) return;
    const pools = r.pools || [];
    const stats = r.stats || [];
    body.replaceChildren(
      ...pools.map((p, i) => {
        const s = stats[i] || {};
        const claims = Number(s.claimsTotal || 0);
        const misses = Number(s.missesTotal || 0);
        const rate = claims + misses ? `${((100 * claims) / (claims + misses)).toFixed(0)}%` : "–";
        return h(
          "tr",
          { tabindex: 0, "data-row": true, "data-pool": p.poolId },
          h("td", {}, p.name || p.poolId, h("div", { class: "muted small" }, p.poolId)),
          h("td", { class: "num" }, String(s.ready || 0), " / ", String(p.minReady || 0), "–", String(p.maxReady || 0)),
          h("td", { class: "num" }, String(s.warming || 0)),
          h("td", { class: "num" }, String(s.claimed || 0)),
          h("td", { class: "num hit", title: `${claims} hits, ${misses} misses` }, rate),
          h("td", { class: "num" }, Number(s.claimsPerMinute || 0).toFixed(1)),
          h("td", { class: "num" }, `${(Number(s.p99ClaimLatencyUs || 0) / 1000).toFixed(1)} ms`),
          h("td", { class: "muted" }, (p.template && p.template.imageRef) || p.imageDigest || "host"),
        );
      }),
    );
    if (!pools.length) body.replaceChildren(h("tr", {}, h("td", { colspan: 8, class: "muted" }, "No pools.")));
  }
  refresh().catch((e) => toast(`${e.code}: ${e.message}`, true));
  return { refresh, stop: () => (alive = false) };
}
