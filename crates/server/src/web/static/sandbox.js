// One sandbox: its state and usage, actions (pause, resume, snapshot, terminate), its
// exposed ports (expose with a TTL, open, copy the URL, revoke), its
// executions with live output (followed, resumed by sequence after a break), its events
// (deny reasons included), its files (browse, download, upload — through the files API,
// which acts as the sandbox) and snapshots. Output is decoded, stripped of terminal
// controls (lib.inert) and appended as text nodes.
import { call, stream, h, ago, enumName, toast, bytes, b64bytes, bytesb64, inert, ApiError } from "./lib.js";
import { requestRows } from "./lists.js";

const STATUS = "SANDBOX_STATUS_";
const EXEC = "EXECUTION_STATUS_";
const CHUNK = 1 << 20;

function section(id, title, ...children) {
  return h("section", { id, class: "panel" }, h("h2", {}, title), ...children);
}

function fail(e) {
  toast(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e), true);
}

export function sandboxPage({ me, main }, id) {
  let alive = true;
  const ctl = new AbortController();
  const head = h("div", { class: "facts", id: "facts" });
  const actions = h(
    "div",
    { class: "actions" },
    h("button", { id: "pause", onclick: () => act("SnapshotService", "PauseSandbox") }, "Pause"),
    h("button", { id: "resume", onclick: () => act("SnapshotService", "ResumeSandbox") }, "Resume"),
    h("button", { id: "snapshot", onclick: () => act("SnapshotService", "CreateSnapshot") }, "Snapshot"),
    h("button", { id: "terminate", class: "danger", onclick: terminate }, "Terminate"),
  );
  const execList = h("ul", { class: "execs", id: "executions" });
  const output = h("pre", { class: "output", id: "output", tabindex: 0, "aria-label": "execution output" });
  const follow = h("input", { type: "checkbox", id: "follow", checked: true });
  const outTitle = h("span", { id: "output-title", class: "muted" }, "choose an execution");
  const events = h("tbody", { id: "events" });
  const requests = h("tbody", { id: "sandbox-requests" });
  const filesPath = h("input", { id: "files-path", value: "/", "aria-label": "directory" });
  const files = h("tbody", { id: "files" });
  const upload = h("input", { type: "file", id: "upload", "aria-label": "upload a file" });
  const snaps = h("tbody", { id: "snapshots" });
  // --- exposed ports (InboundService) -------------------------------------------------
  // The URLs are on the server's main listener — another origin than this console's, by
  // design (docs/web.md) — and open in a new tab that cannot reach back to this one.
  const exposures = h("tbody", { id: "exposures" });
  const exposePort = h("input", { id: "expose-port", type: "number", min: 1, max: 65535, placeholder: "port", "aria-label": "port to expose" });
  const exposeTtl = h(
    "select",
    { id: "expose-ttl", "aria-label": "expires after" },
    ...[
      [900, "15 minutes"],
      [3600, "1 hour"],
      [28800, "8 hours"],
      [86400, "1 day"],
      [604800, "7 days"],
    ].map(([v, label]) => h("option", { value: v, selected: v === 3600 }, label)),
  );
  const exposeForm = h("form", { id: "expose-form", class: "tools" }, exposePort, exposeTtl, h("button", { type: "submit" }, "Expose"));
  exposeForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const r = await call("InboundService", "ExposeSandboxPort", { sandboxId: id, port: Number(exposePort.value), ttlSeconds: exposeTtl.value });
      toast(`port ${r.exposure.port} exposed`);
      exposePort.value = "";
      refresh();
    } catch (err) {
      fail(err);
    }
  });
  function exposureUrl(x) {
    // Under `serve --preview-domain` the server gives the whole URL: its own shape only
    // (http(s), the exposure's own host name), never another scheme or host.
    const hex = String(x.id || "").replace(/^exp_/, "");
    if (x.url && /^[0-9a-f]{32}$/.test(hex) && new RegExp(`^https?://exp-${hex}\\.[a-z0-9.-]+(:[0-9]+)?/`).test(x.url)) return x.url;
    // Only the server's own path shape becomes a link (never another scheme).
    if (!me.exposureBase || !/^\/_sandbox\/exp_[0-9a-f]+\//.test(x.path || "")) return "";
    return me.exposureBase + x.path;
  }
  function until(unixSeconds) {
    const s = Number(unixSeconds || 0) - Date.now() / 1000;
    if (s <= 0) return "expired";
    if (s < 3600) return `in ${Math.max(1, Math.round(s / 60))}m`;
    if (s < 86400) return `in ${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
    return `in ${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
  }
  function renderExposures(list) {
    exposures.replaceChildren(
      ...list.map((x) => {
        const url = exposureUrl(x);
        return h(
          "tr",
          { tabindex: 0, "data-row": true, "data-exposure": x.id, "data-port": x.port },
          h("td", { class: "num" }, String(x.port)),
          h("td", { class: "url" }, url ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, url) : h("code", {}, x.path || "")),
          h("td", { title: new Date(Number(x.expiresAt || 0) * 1000).toISOString() }, until(x.expiresAt)),
          h("td", { class: "muted" }, x.createdBy || ""),
          h(
            "td",
            {},
            h("button", { class: "copy", onclick: () => copy(url || x.path || "") }, "Copy URL"),
            " ",
            h("button", { class: "revoke", onclick: () => revoke(x) }, "Revoke"),
          ),
        );
      }),
    );
    if (!list.length) exposures.replaceChildren(h("tr", {}, h("td", { colspan: 5, class: "muted" }, "No port is exposed.")));
  }
  async function copy(text) {
    // The URL carries the exposure's token: it goes to the clipboard, never to a log.
    try {
      await navigator.clipboard.writeText(text);
      toast("URL copied");
    } catch (e) {
      fail(new Error(`cannot copy (the browser refused the clipboard): ${e.message || e}`));
    }
  }
  async function revoke(x) {
    try {
      await call("InboundService", "UnexposeSandboxPort", { sandboxId: id, target: x.id });
      toast(`port ${x.port} no longer exposed`);
      refresh();
    } catch (e) {
      fail(e);
    }
  }

  main.replaceChildren(
    h("p", {}, h("a", { href: "/ui/", "data-nav": true }, "← sandboxes")),
    h("h1", { id: "sandbox-id" }, id),
    head,
    actions,
    h(
      "div",
      { class: "cols" },
      section("executions-panel", "Executions", execList),
      section(
        "output-panel",
        "Output",
        h("div", { class: "tools" }, outTitle, h("label", {}, follow, " follow (f)")),
        output,
      ),
    ),
    section(
      "exposures-panel",
      "Exposed ports",
      exposeForm,
      h("table", { class: "grid" }, h("thead", {}, h("tr", {}, h("th", {}, "port"), h("th", {}, "URL"), h("th", {}, "expires"), h("th", {}, "by"), h("th", {}, ""))), exposures),
      me.exposureBase ? null : h("p", { class: "muted small" }, "This server's main listener is a unix socket: reach a path with curl --unix-socket."),
    ),
    section("requests-panel", "Waiting for an answer", h("table", { class: "grid" }, requests)),
    section("events-panel", "Events", h("table", { class: "grid" }, h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "when"), h("th", {}, "event"), h("th", {}, "detail"))), events)),
    section(
      "files-panel",
      "Files",
      h("div", { class: "tools" }, filesPath, h("button", { onclick: () => listFiles(filesPath.value) }, "List"), upload),
      h("table", { class: "grid" }, files),
    ),
    section("snapshots-panel", "Snapshots", h("table", { class: "grid" }, snaps)),
  );

  async function act(service, method) {
    try {
      await call(service, method, { sandboxId: id });
      toast(`${method.replace("Sandbox", "").toLowerCase()}: done`);
      refresh();
    } catch (e) {
      fail(e);
    }
  }

  async function terminate() {
    const b = document.getElementById("terminate");
    if (b.dataset.armed !== "1") {
      // A second press confirms (no modal dialog).
      b.dataset.armed = "1";
      b.textContent = "Terminate: press again";
      setTimeout(() => {
        b.dataset.armed = "";
        b.textContent = "Terminate";
      }, 3000);
      return;
    }
    await act("SandboxService", "TerminateSandbox");
  }

  function facts(s) {
    const u = s.usage || {};
    const disk = (u.filesystems || []).reduce((a, f) => a + Number(f.usedBytes || 0), 0);
    const row = (k, v) => [h("dt", {}, k), h("dd", {}, v)];
    head.replaceChildren(
      h(
        "dl",
        {},
        row("status", h("span", { class: `status ${enumName(s.status, STATUS)}`, id: "status" }, enumName(s.status, STATUS))),
        row("runtime", s.backend || ""),
        row("image", s.imageRef || "host"),
        row("labels", Object.entries(s.labels || {}).map(([k, v]) => `${k}=${v}`).join(" ")),
        row("created", `${ago(s.createdAt)} (${s.createdAt || ""})`),
        s.expiresAt ? row("expires", s.expiresAt) : [],
        row("cpu", `${(Number(u.cpuUsec || 0) / 1e6).toFixed(2)} s`),
        row("memory", bytes(u.memoryBytes)),
        row("disk", bytes(disk)),
        row("network", `↑ ${bytes(u.networkTxBytes)} ↓ ${bytes(u.networkRxBytes)}`),
        row("processes", String(u.pids || 0)),
        (s.egressApproved || []).length ? row("allowed (remembered)", s.egressApproved.join(" ")) : [],
        (s.egressRefused || []).length ? row("refused (remembered)", s.egressRefused.join(" ")) : [],
        s.message ? row("message", s.message) : [],
      ),
    );
  }

  // --- executions, from the event stream -------------------------------------------
  const execs = new Map(); // id -> status
  function renderExecs() {
    execList.replaceChildren(
      ...[...execs.entries()].reverse().map(([eid, st]) =>
        h(
          "li",
          {},
          h("button", { class: "link", "data-row": true, "data-exec": eid, onclick: () => openExec(eid) }, eid, " ", h("span", { class: `status ${st}` }, st)),
        ),
      ),
    );
  }

  let outCtl = null;
  async function openExec(eid) {
    if (outCtl) outCtl.abort();
    outCtl = new AbortController();
    const mine = outCtl;
    output.replaceChildren();
    outTitle.textContent = eid;
    const dec = { 1: new TextDecoder(), 2: new TextDecoder() };
    let after = 0;
    for (let attempt = 0; alive && !mine.signal.aborted && attempt < 100; attempt++) {
      try {
        let ended = false;
        await stream(
          "ExecutionService",
          "StreamExecution",
          { sandboxId: id, executionId: eid, afterSequence: String(after) },
          (ev) => {
            after = Math.max(after, Number(ev.sequence || 0));
            if (ev.output) {
              const s = ev.output.stream === "OUTPUT_STREAM_STDERR" ? 2 : 1;
              const text = inert(dec[s].decode(b64bytes(ev.output.data), { stream: true }));
              if (text) output.append(s === 2 ? h("span", { class: "stderr" }, text) : document.createTextNode(text));
              if (follow.checked) output.scrollTop = output.scrollHeight;
            } else if (ev.exit) {
              ended = true;
              output.append(h("div", { class: "exit" }, `[${enumName(ev.exit.status, EXEC)}, exit ${ev.exit.exitCode || 0}${ev.exit.code ? `, ${ev.exit.code}` : ""}]`));
            } else if (ev.warning) {
              output.append(h("div", { class: "warning" }, `[${ev.warning.code}] ${inert(ev.warning.message || "")}`));
            }
          },
          mine.signal,
        );
        if (ended || mine.signal.aborted) return;
      } catch (e) {
        if (mine.signal.aborted) return;
        if (e instanceof ApiError && e.status !== 200) return fail(e);
      }
      // The stream broke: resume after the last sequence seen.
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  // --- events ----------------------------------------------------------------------
  function detail(ev) {
    const a = ev.attributes || {};
    const parts = [];
    if (ev.type === "sandbox.status" && ev.sandboxStatus) parts.push(enumName(ev.sandboxStatus, STATUS));
    if (ev.type === "execution.status" && ev.executionStatus) parts.push(`${ev.executionId} ${enumName(ev.executionStatus, EXEC)}`);
    if (a.host) parts.push(`${a.host}${a.port ? `:${a.port}` : ""}`);
    if (a.decision) parts.push(a.decision);
    if (a.reason) parts.push(`reason ${a.reason}`);
    if (a.code) parts.push(a.code);
    if (ev.message) parts.push(ev.message);
    return inert(parts.join(" · "));
  }

  async function followEvents() {
    let after = 0;
    while (alive) {
      try {
        await stream(
          "SandboxService",
          "StreamSandboxEvents",
          { sandboxId: id, afterSequence: String(after), follow: true },
          (ev) => {
            after = Math.max(after, Number(ev.sequence || 0));
            const deny = /deny|denied/.test(ev.type) || (ev.attributes && ev.attributes.decision === "deny");
            events.prepend(
              h(
                "tr",
                { class: deny ? "deny" : "" },
                h("td", { class: "num" }, String(ev.sequence)),
                h("td", { title: ev.at || "" }, (ev.at || "").replace("T", " ").replace(/\.\d+Z$/, "Z")),
                h("td", {}, ev.type),
                h("td", {}, detail(ev)),
              ),
            );
            if (ev.executionId) {
              const st = ev.executionStatus ? enumName(ev.executionStatus, EXEC) : execs.get(ev.executionId) || "running";
              const isNew = !execs.has(ev.executionId);
              execs.set(ev.executionId, st);
              renderExecs();
              if (isNew && !outCtl) openExec(ev.executionId);
            }
          },
          ctl.signal,
        );
        return; // the sandbox ended
      } catch (e) {
        if (!alive) return;
        if (e instanceof ApiError && e.code === "sandbox_not_found") {
          main.replaceChildren(h("h1", {}, "Not found"), h("p", {}, "No sandbox ", h("code", {}, id), " here."));
          alive = false;
          return;
        }
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  // --- files -------------------------------------------------------------------------
  async function listFiles(dir) {
    try {
      const r = await call("FileService", "ListSandboxFiles", { sandboxId: id, path: dir });
      const up = dir.replace(/\/[^/]*\/?$/, "") || "/";
      files.replaceChildren(
        dir !== "/" ? h("tr", {}, h("td", {}, h("button", { class: "link", onclick: () => nav(up) }, "..")), h("td", {}), h("td", {})) : [],
        ...(r.entries || []).map((f) => {
          const dirEntry = f.type === "SANDBOX_FILE_TYPE_DIRECTORY";
          return h(
            "tr",
            { tabindex: 0, "data-row": true, "data-path": f.path },
            h("td", { class: "name" }, dirEntry ? h("button", { class: "link", onclick: () => nav(f.path) }, `${f.name}/`) : f.name),
            h("td", { class: "num" }, dirEntry ? "" : bytes(f.size)),
            h("td", {}, f.type === "SANDBOX_FILE_TYPE_REGULAR" ? h("button", { class: "download", onclick: () => download(f) }, "Download") : f.symlinkTarget ? `→ ${f.symlinkTarget}` : ""),
          );
        }),
      );
    } catch (e) {
      fail(e);
    }
  }
  function nav(p) {
    filesPath.value = p;
    listFiles(p);
  }

  async function download(f) {
    try {
      const parts = [];
      await stream("FileService", "ReadSandboxFile", { sandboxId: id, path: f.path }, (m) => {
        if (m.data) parts.push(b64bytes(m.data));
      });
      const url = URL.createObjectURL(new Blob(parts, { type: "application/octet-stream" }));
      const a = h("a", { href: url, download: f.name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) {
      fail(e);
    }
  }

  upload.addEventListener("change", async () => {
    const file = upload.files && upload.files[0];
    if (!file) return;
    const data = new Uint8Array(await file.arrayBuffer());
    const dir = filesPath.value.endsWith("/") ? filesPath.value : `${filesPath.value}/`;
    try {
      let uploadId = "";
      let offset = 0;
      do {
        const chunk = data.subarray(offset, offset + CHUNK);
        const last = offset + chunk.length >= data.length;
        const r = await call("FileService", "WriteSandboxFile", {
          sandboxId: id,
          path: uploadId ? "" : dir + file.name,
          uploadId,
          offset: String(offset),
          data: bytesb64(chunk),
          finish: last,
        });
        uploadId = r.uploadId || uploadId;
        offset += chunk.length;
      } while (offset < data.length);
      toast(`uploaded ${file.name}`);
      upload.value = "";
      listFiles(filesPath.value);
    } catch (e) {
      fail(e);
    }
  });

  // --- refresh (live signal) ---------------------------------------------------------
  async function refresh() {
    let s;
    try {
      s = (await call("SandboxService", "GetSandbox", { sandboxId: id })).sandbox || {};
    } catch (e) {
      if (e.code === "sandbox_not_found") {
        alive = false;
        main.replaceChildren(h("h1", {}, "Not found"), h("p", {}, "No sandbox ", h("code", {}, id), " here."));
        return;
      }
      throw e;
    }
    if (!alive) return;
    facts(s);
    renderExposures(s.exposures || []);
    const mine = s.egressAsks ? (await call("ApprovalService", "ListEgressRequests", { sandboxId: id })).requests || [] : [];
    requests.replaceChildren(...requestRows(mine, refresh));
    document.getElementById("requests-panel").hidden = mine.length === 0;
    const sn = await call("SnapshotService", "ListSnapshots", {});
    const taken = (sn.snapshots || []).filter((x) => x.sourceSandboxId === id);
    // An empty table reads as "still loading" or "broken": say there is none.
    if (!taken.length) snaps.replaceChildren(h("tr", {}, h("td", { colspan: 4, class: "muted" }, "No snapshot of this sandbox.")));
    else snaps.replaceChildren(
      ...taken.map((x) => h("tr", { "data-snapshot": x.snapshotId }, h("td", {}, x.snapshotId), h("td", { class: "num" }, bytes(x.sizeBytes)), h("td", { class: "num" }, `${x.fileCount || 0} files`), h("td", {}, ago(x.createdAt)))),
    );
  }

  refresh().catch(fail);
  followEvents();
  listFiles("/");
  return {
    refresh,
    stop: () => {
      alive = false;
      ctl.abort();
      if (outCtl) outCtl.abort();
    },
    key: (e) => {
      if (e.key === "f") follow.checked = !follow.checked;
      const row = document.activeElement && document.activeElement.closest("tr[data-request]");
      if (row && e.key === "y") row.querySelector("button.allow").click();
      if (row && e.key === "n") row.querySelector("button.deny").click();
    },
  };
}
