// Smolsweep window. Talks to the shell only through its commands and events.
"use strict";

const tauri = window.__TAURI__;
const invoke = (cmd, args) => tauri.core.invoke(cmd, args);
const listen = (ev, f) => tauri.event.listen(ev, f);

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

// Same formatting as the core's human_bytes: decimal units.
function bytes(n) {
  const u = ["B", "kB", "MB", "GB", "TB", "PB"];
  if (n < 1000) return `${n} B`;
  let v = n, i = 0;
  while (v >= 1000 && i < u.length - 1) { v /= 1000; i++; }
  return v >= 100 ? `${v.toFixed(0)} ${u[i]}` : `${v.toFixed(1)} ${u[i]}`;
}

function ago(secs) {
  if (!secs) return "";
  const d = Math.max(0, Date.now() / 1000 - secs);
  if (d < 60) return "just now";
  if (d < 3600) return `${Math.floor(d / 60)} min ago`;
  if (d < 86400) return `${Math.floor(d / 3600)} h ago`;
  return `${Math.floor(d / 86400)} days ago`;
}

const PRODUCT = { celesto: "Celesto SmolVM", smolvm: "smol-machines smolvm" };
const VERDICT = { reclaimable: "reclaimable", opt_in: "opt-in", protected: "protected", unknown: "can't verify" };
const kindLabel = (k) => k.replace(/^[a-z]+\./, "").replace(/_/g, " ");

let state = { status: null, selected: new Set(), touched: false, busy: false, confirmDigest: null };

// In-page confirmation (webviews do not all implement window.confirm).
function ask(title, text, ok) {
  const d = $("#ask-dialog");
  $("#ask-title").textContent = title;
  $("#ask-text").textContent = text;
  $("#ask-ok").textContent = ok;
  d.returnValue = "";
  d.showModal();
  return new Promise((resolve) => d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true }));
}

let toastTimer;
function toast(msg) {
  const t = $("#toast");
  t.textContent = msg;
  t.classList.remove("hidden");
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => t.classList.add("hidden"), 6000);
}

// ---- navigation -------------------------------------------------------------------------------

function show(view) {
  if (!$(`#view-${view}`)) view = "overview";
  $$(".view").forEach((v) => v.classList.toggle("active", v.id === `view-${view}`));
  $$("nav button[data-view]").forEach((b) => b.classList.toggle("active", b.dataset.view === view));
  if (view === "history") loadHistory();
  if (view === "settings") loadSettings();
}

$$("nav button[data-view]").forEach((b) => b.addEventListener("click", () => show(b.dataset.view)));
$$("[data-goto]").forEach((a) => a.addEventListener("click", (e) => { e.preventDefault(); show(a.dataset.goto); }));
$("#overview-review").addEventListener("click", () => show("findings"));

// ---- status -----------------------------------------------------------------------------------

function render(status) {
  state.status = status;
  const r = status.report;
  $("#scan-state").textContent = status.scanning ? "Scanning…" : r ? (r.scanned_at ? `Scanned ${ago(r.scanned_at)}` : "Scan complete") : status.error ? "" : "Scanning…";
  const line = $("#status-line");
  line.textContent = status.tray.status;
  line.classList.toggle("warn", status.tray.status.startsWith("Can't verify"));
  if (!r) {
    $("#findings-list").replaceChildren(el("div", { class: "empty", text: status.error || "Scanning…" }));
    return;
  }
  const t = r.totals;
  $("#t-reclaimable").textContent = bytes(t.reclaimable_allocated_bytes);
  $("#t-reclaimable-n").textContent = `${t.reclaimable_count} item${t.reclaimable_count === 1 ? "" : "s"}`;
  $("#t-optin").textContent = bytes(t.opt_in_allocated_bytes);
  $("#t-optin-n").textContent = `${t.opt_in_count} item${t.opt_in_count === 1 ? "" : "s"}`;
  $("#t-protected").textContent = bytes(t.protected_allocated_bytes);
  $("#t-orphans").textContent = String(t.orphan_process_count);
  $("#t-held").textContent = t.held_deleted_bytes ? `holding ${bytes(t.held_deleted_bytes)} of deleted files` : "";
  $("#nav-count").textContent = r.findings.length ? String(r.findings.length) : "";
  $("#nav-vms").textContent = r.processes.length ? String(r.processes.length) : "";
  renderChart(r);
  renderProblems(r);
  renderFindings(r);
  renderVms(r);
}

function renderChart(r) {
  const chart = $("#space-chart");
  const byProduct = new Map();
  for (const f of r.findings) {
    if (!byProduct.has(f.product)) byProduct.set(f.product, new Map());
    const m = byProduct.get(f.product);
    m.set(f.kind, (m.get(f.kind) || 0) + f.allocated_bytes);
  }
  if (!byProduct.size) { chart.replaceChildren(el("div", { class: "empty", text: "Nothing from either SmolVM was found." })); return; }
  const max = Math.max(...Array.from(byProduct.values(), (m) => Array.from(m.values()).reduce((a, b) => a + b, 0)), 1);
  const rows = [];
  for (const [product, kinds] of byProduct) {
    const total = Array.from(kinds.values()).reduce((a, b) => a + b, 0);
    const bar = el("div", { class: "bar" });
    const legend = el("div", { class: "legend" });
    const sorted = Array.from(kinds.entries()).sort((a, b) => b[1] - a[1]);
    sorted.forEach(([kind, n], i) => {
      const color = `var(--c${(i % 8) + 1})`;
      const seg = el("div", { class: "seg", title: `${kindLabel(kind)}: ${bytes(n)}` });
      seg.style.width = `${(n / max) * 100}%`;
      seg.style.background = color;
      bar.append(seg);
      const sw = el("i"); sw.style.background = color;
      legend.append(el("span", {}, sw, `${kindLabel(kind)} ${bytes(n)}`));
    });
    rows.push(el("div", { class: "prod" }, el("b", { text: PRODUCT[product] || product }), bar, el("span", { class: "total", text: bytes(total) })));
    rows.push(el("div", { class: "prod" }, el("span"), legend, el("span")));
  }
  chart.replaceChildren(...rows);
}

function renderProblems(r) {
  const p = [];
  for (const pr of r.products) {
    for (const x of pr.problems) p.push(el("div", { class: "problem small" }, el("b", { text: `${PRODUCT[pr.product]}: ` }), x));
  }
  $("#problems").replaceChildren(...p);
}

function selectable(f) { return f.verdict === "reclaimable" || f.verdict === "opt_in"; }

function renderFindings(r) {
  // Default selection: reclaimable checked, opt-in unchecked; kept across rescans once touched.
  const byId = new Map(r.findings.map((f) => [f.id, f]));
  if (!state.touched) state.selected = new Set(r.findings.filter((f) => f.verdict === "reclaimable").map((f) => f.id));
  state.selected = new Set([...state.selected].filter((id) => byId.has(id) && selectable(byId.get(id))));
  const groups = new Map();
  for (const f of r.findings) {
    const key = `${f.product}\u0000${f.kind}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(f);
  }
  if (!groups.size) { $("#findings-list").replaceChildren(el("div", { class: "empty", text: "Nothing to reclaim." })); updateSelection(); return; }
  const order = { reclaimable: 0, opt_in: 1, unknown: 2, protected: 3 };
  const sorted = Array.from(groups.entries()).sort((a, b) => {
    const va = Math.min(...a[1].map((f) => order[f.verdict])), vb = Math.min(...b[1].map((f) => order[f.verdict]));
    return va - vb || a[0].localeCompare(b[0]);
  });
  const out = [];
  for (const [key, fs] of sorted) {
    const [product, kind] = key.split("\u0000");
    const total = fs.reduce((a, f) => a + f.allocated_bytes, 0);
    const rows = fs.map((f) => {
      const can = selectable(f);
      const box = el("input", {
        type: "checkbox", class: "select", "aria-label": `Select ${f.path}`,
        disabled: !can, checked: can && state.selected.has(f.id),
        title: can ? "" : f.verdict === "protected" ? "Protected: never deleted" : "Could not be verified: never deleted",
      });
      box.addEventListener("change", () => {
        state.touched = true;
        if (box.checked) state.selected.add(f.id); else state.selected.delete(f.id);
        updateSelection();
      });
      const size = bytes(f.apparent_bytes) !== bytes(f.allocated_bytes)
        ? el("td", { class: "size" }, bytes(f.allocated_bytes), el("div", { class: "reason", text: `${bytes(f.apparent_bytes)} apparent` }))
        : el("td", { class: "size", text: bytes(f.allocated_bytes) });
      return el("tr", { class: `finding ${f.verdict}`, dataset: { id: f.id, verdict: f.verdict } },
        el("td", { class: "sel" }, box),
        el("td", {}, el("div", { class: "path", text: f.path }), el("div", { class: "reason", text: f.reason + (f.owner ? ` (${f.owner})` : "") })),
        el("td", { class: "verdict" }, el("span", { class: `badge ${f.verdict}`, text: VERDICT[f.verdict] })),
        size);
    });
    out.push(el("section", { class: "group" },
      el("header", {}, el("span", { text: `${PRODUCT[product] || product} · ${kindLabel(kind)}` }), el("span", { class: "size", text: `${fs.length} · ${bytes(total)}` })),
      el("table", {}, el("tbody", {}, rows))));
  }
  $("#findings-list").replaceChildren(...out);
  updateSelection();
}

function updateSelection() {
  const r = state.status && state.status.report;
  const chosen = r ? r.findings.filter((f) => state.selected.has(f.id)) : [];
  const total = chosen.reduce((a, f) => a + f.allocated_bytes, 0);
  $("#selection-summary").textContent = chosen.length ? `${chosen.length} selected · ${bytes(total)}` : "Nothing selected";
  const btn = $("#reclaim-btn");
  btn.disabled = !chosen.length || state.busy;
  btn.textContent = chosen.length ? `Reclaim ${bytes(total)}…` : "Reclaim…";
}

function renderVms(r) {
  const list = $("#vms-list");
  if (!r.processes.length) { list.replaceChildren(el("div", { class: "empty", text: "No SmolVM VM is running." })); return; }
  const machines = new Map(r.machines.map((m) => [`${m.product}:${m.name}`, m]));
  const rows = r.processes.map((p) => {
    const m = p.owner ? machines.get(`${p.product}:${p.owner}`) : null;
    const mine = p.scope === "this_home";
    const age = m && m.created_at ? `created ${ago(m.created_at)}` : "";
    const meta = [`pid ${p.pid}`, p.shape, mine ? "" : "another HOME", age, p.held_deleted_bytes ? `holds ${bytes(p.held_deleted_bytes)} of deleted files` : ""].filter(Boolean).join(" · ");
    const who = `${PRODUCT[p.product]} ${p.owner || ""} (pid ${p.pid})`;
    const act = (action) => async () => {
      const yes = action === "reap"
        ? await ask("Reap orphaned VM", `Kill ${who}? No inventory owns it; anything running inside is lost (SIGTERM, then SIGKILL after 2 s).`, "Kill")
        : await ask("Stop VM", `Ask ${who} to shut down (SIGTERM; SIGKILL if it is still running after 10 s)?`, "Stop");
      if (!yes) return;
      try { render(await invoke("vm_action", { pid: p.pid, startTime: p.start_time, action })); }
      catch (e) { toast(String(e)); }
    };
    return el("div", { class: "vm", dataset: { pid: p.pid } },
      el("div", {},
        el("div", {}, el("b", { text: `${PRODUCT[p.product]} · ${p.owner || "unknown owner"}` }), " ",
          el("span", { class: `badge ${p.orphan ? "orphan" : "reclaimable"}`, text: p.orphan ? "orphaned" : (m ? m.effective_state || m.state : "running") })),
        el("div", { class: "meta", text: meta }),
        p.reason ? el("div", { class: "meta", text: p.reason }) : null),
      el("div", { class: "buttons" },
        el("button", { class: "secondary", disabled: !mine, onclick: act("stop") }, "Stop"),
        p.orphan ? el("button", { class: "danger", disabled: !mine, onclick: act("reap") }, "Reap") : null));
  });
  list.replaceChildren(el("div", { class: "group" }, rows));
}

// ---- reclaim ----------------------------------------------------------------------------------

$("#reclaim-btn").addEventListener("click", async () => {
  const ids = [...state.selected];
  let plan;
  try { plan = await invoke("plan_reclaim", { ids }); } catch (e) { toast(String(e)); return; }
  const n = plan.steps.length;
  $("#confirm-title").textContent = `Reclaim ${bytes(plan.estimated_bytes)}`;
  $("#confirm-summary").textContent = n
    ? `This deletes ${n} item${n === 1 ? "" : "s"} (${bytes(plan.estimated_bytes)} estimated). Nothing else is touched.`
    : "Nothing selected can be reclaimed.";
  $("#confirm-list").replaceChildren(...plan.steps.map((s) =>
    el("li", { dataset: { id: s.id } }, el("span", { class: "action", text: s.action }), el("span", { class: "path", text: s.path }), el("span", { class: "muted", text: bytes(s.allocated_bytes) }))));
  $("#confirm-refused").replaceChildren(...(plan.refused.length
    ? [el("p", { class: "small muted", text: "Not included:" }), el("ul", { class: "small" }, plan.refused.map((x) => el("li", { text: `${x.path || x.id}: ${x.reason}` })))]
    : []));
  state.confirmDigest = plan.digest;
  $("#confirm-go").disabled = !n;
  $("#confirm-go").textContent = n ? `Delete ${n} item${n === 1 ? "" : "s"}` : "Delete";
  $("#confirm-dialog").showModal();
});

$("#confirm-dialog").addEventListener("close", async () => {
  if ($("#confirm-dialog").returnValue !== "go") return;
  const ids = [...state.selected];
  state.busy = true; updateSelection();
  $("#result").classList.add("hidden");
  $("#progress").classList.remove("hidden");
  $("#progress-fill").style.width = "0";
  $("#progress-text").textContent = "Starting…";
  try {
    // The fingerprint of what was shown: if a scan changed the plan since, nothing runs.
    const out = await invoke("execute_reclaim", { ids, digest: state.confirmDigest });
    showResult(out);
    state.touched = false;
  } catch (e) {
    $("#result").className = "result partial";
    $("#result").replaceChildren(el("h2", { text: "Reclaim failed" }), el("p", { text: String(e) }));
  } finally {
    state.busy = false;
    $("#progress").classList.add("hidden");
    refresh();
  }
});

function showResult(out) {
  const removed = out.steps.filter((s) => s.status === "removed");
  const other = out.steps.filter((s) => s.status !== "removed");
  const box = $("#result");
  box.className = `result${other.length ? " partial" : ""}`;
  box.replaceChildren(
    el("h2", {}, "Freed ", el("span", { id: "result-measured", text: bytes(out.measured_bytes) })),
    el("p", { class: "small" }, `Removed ${removed.length} item${removed.length === 1 ? "" : "s"}; estimated `, el("span", { id: "result-estimated", text: bytes(out.estimated_bytes) }), ", measured ", bytes(out.measured_bytes), "."),
    ...(other.length ? [el("ul", { class: "small" }, other.map((s) => el("li", { text: `${s.status}: ${s.path} — ${s.message}` })))] : []),
    ...(out.refused.length ? [el("p", { class: "small muted", text: `${out.refused.length} selected item${out.refused.length === 1 ? " was" : "s were"} not included (protected or not verified).` })] : []));
}

listen("reclaim-progress", (e) => {
  const p = e.payload;
  $("#progress-fill").style.width = `${(p.done / Math.max(p.total, 1)) * 100}%`;
  $("#progress-text").textContent = `${p.done} of ${p.total}: ${p.path}`;
});

// ---- history and settings --------------------------------------------------------------------

async function loadHistory() {
  const h = await invoke("get_history");
  const list = $("#history-list");
  if (!h.length) { list.replaceChildren(el("div", { class: "empty", text: "Nothing reclaimed yet." })); return; }
  list.replaceChildren(el("div", { class: "group" }, el("table", {}, el("tbody", {}, h.map((o) => {
    const removed = o.steps.filter((s) => s.status === "removed").length;
    const bad = o.steps.length - removed;
    return el("tr", {},
      el("td", { text: new Date(o.finished_at * 1000).toLocaleString() }),
      el("td", { text: `${removed} removed${bad ? `, ${bad} skipped or failed` : ""}` }),
      el("td", { class: "size", text: bytes(o.measured_bytes) }),
      el("td", { class: "size muted", text: `est. ${bytes(o.estimated_bytes)}` }));
  })))));
}

async function loadSettings() {
  const s = await invoke("get_settings");
  const sel = $("#s-interval");
  if (![...sel.options].some((o) => Number(o.value) === s.scan_interval_secs)) {
    sel.append(el("option", { value: s.scan_interval_secs, text: `${Math.round(s.scan_interval_secs / 60)} minutes` }));
  }
  sel.value = String(s.scan_interval_secs);
  $("#s-notify").checked = s.notifications;
  $("#s-autostart").checked = s.autostart;
  $$(".s-class").forEach((c) => { c.checked = s.include_opt_in.includes(c.value); });
}

async function saveSettings() {
  const settings = {
    scan_interval_secs: Number($("#s-interval").value),
    notifications: $("#s-notify").checked,
    autostart: $("#s-autostart").checked,
    include_opt_in: $$(".s-class").filter((c) => c.checked).map((c) => c.value),
  };
  try {
    await invoke("set_settings", { settings });
    $("#settings-saved").textContent = "Saved.";
  } catch (e) {
    $("#settings-saved").textContent = String(e);
  }
}
$("#settings-form").addEventListener("change", saveSettings);

// ---- start ------------------------------------------------------------------------------------

async function refresh() { render(await invoke("get_status")); }

$("#rescan-btn").addEventListener("click", async () => {
  $("#scan-state").textContent = "Scanning…";
  try { render(await invoke("rescan")); } catch (e) { $("#scan-state").textContent = String(e); }
});

listen("status-updated", (e) => render(e.payload));
listen("navigate", (e) => show(e.payload));
show((location.hash || "#overview").slice(1));
refresh();
