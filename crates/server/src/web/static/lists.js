// The list pages but the sandboxes' (sandboxes.js): the approvals queue (live, answerable)
// and pools (with their hit rate). Each is { refresh(), stop(), key(e) }: refresh is called
// on every live signal and reads through the API as the session's principal.
import { call, h, ago, toast } from "./lib.js";
import { SandboxSet } from "./sandboxes.js";

// Every open ask request the principal may answer, oldest first.
// The live sandboxes, followed by changes only (see SandboxSet); those that may ask are
// asked for their requests.
const live = new SandboxSet(() => ({}));
export async function openRequests() {
  await live.sync();
  const asking = [...live.byId.values()].filter((s) => s.egressAsks);
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
