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

// `pending` is what the open confirmation would run: a reclaim ({ kind: "reclaim", digest }) or a
// VM action ({ kind: "vm", plan }), each with the fingerprint of the core plan it shows.
let state = { status: null, selected: new Set(), touched: false, busy: false, pending: null };

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
    // What each button asks for; the core plans it (from a fresh scan) and the confirmation shows
    // that plan. Another HOME's VM plans nothing: the confirmation says why.
    const button = (action, label, cls) => el("button", { class: cls, dataset: { action }, onclick: () => planVm(p, action, false) }, label);
    const buttons = p.orphan || !mine
      ? [button(p.orphan ? "reap" : "stop", p.orphan ? "End process" : "Stop", p.orphan ? "danger" : "secondary")]
      : [button("stop", "Stop", "secondary"), m ? button("delete", "Delete", "danger") : null];
    return el("div", { class: "vm", dataset: { pid: p.pid } },
      el("div", {},
        el("div", {}, el("b", { text: `${PRODUCT[p.product]} · ${p.owner || "unknown owner"}` }), " ",
          el("span", { class: `badge ${p.orphan ? "orphan" : "reclaimable"}`, text: p.orphan ? "orphaned" : (m ? m.effective_state || m.state : "running") })),
        el("div", { class: "meta", text: meta }),
        p.reason ? el("div", { class: "meta", text: p.reason }) : null),
      el("div", { class: "buttons" }, buttons));
  });
  list.replaceChildren(el("div", { class: "group" }, rows));
}

// ---- reclaim ----------------------------------------------------------------------------------

// One confirmation for everything that acts: it shows the core plan (what runs, what was not
// planned and why) and carries the plan's fingerprint; the shell runs the plan only if it still
// has that fingerprint.
function openConfirm({ title, summary, items, refused, go, enabled, cascade }) {
  $("#confirm-title").textContent = title;
  $("#confirm-summary").textContent = summary;
  $("#confirm-list").replaceChildren(...items);
  $("#confirm-list").classList.toggle("hidden", !items.length);
  $("#confirm-refused").replaceChildren(...(refused.length
    ? [el("p", { class: "small muted", text: items.length ? "Not included:" : "Not planned:" }), el("ul", { class: "small" }, refused.map((x) => el("li", { text: `${x.path || x.id}: ${x.reason}` })))]
    : []));
  $("#confirm-cascade-row").classList.toggle("hidden", cascade === undefined);
  $("#confirm-cascade").checked = !!cascade;
  $("#confirm-go").disabled = !enabled;
  $("#confirm-go").textContent = go;
  const d = $("#confirm-dialog");
  // Closing with Escape keeps the previous returnValue: start from none, so only "go" runs.
  if (!d.open) { d.returnValue = ""; d.showModal(); }
}

$("#reclaim-btn").addEventListener("click", async () => {
  const ids = [...state.selected];
  let plan;
  try { plan = await invoke("plan_reclaim", { ids }); } catch (e) { toast(String(e)); return; }
  const n = plan.steps.length;
  state.pending = { kind: "reclaim", digest: plan.digest };
  openConfirm({
    title: `Reclaim ${bytes(plan.estimated_bytes)}`,
    summary: n
      ? `This deletes ${n} item${n === 1 ? "" : "s"} (${bytes(plan.estimated_bytes)} estimated). Nothing else is touched.`
      : "Nothing selected can be reclaimed.",
    items: plan.steps.map((s) =>
      el("li", { dataset: { id: s.id } }, el("span", { class: "action", text: s.action }), el("span", { class: "path", text: s.path }), el("span", { class: "muted", text: bytes(s.allocated_bytes) }))),
    refused: plan.refused,
    go: n ? `Delete ${n} item${n === 1 ? "" : "s"}` : "Delete",
    enabled: n > 0,
  });
});

// Stop / End process / Delete of one VM: the shell scans, plans, and returns the plan to show.
async function planVm(p, action, cascade) {
  let plan;
  try { plan = await invoke("plan_vm_action", { pid: p.pid, startTime: p.start_time, action, cascade }); }
  catch (e) { toast(String(e)); return; }
  state.pending = { kind: "vm", plan };
  openConfirm({
    title: plan.title,
    summary: plan.question,
    items: plan.steps.map((s, i) => el("li", { dataset: { index: i } }, el("span", { class: "path", text: s }))),
    refused: plan.refused,
    go: plan.ok,
    enabled: plan.steps.length > 0,
    cascade: action === "delete" && (plan.cascade || plan.cascade_available) ? plan.cascade : undefined,
  });
}

$("#confirm-cascade").addEventListener("change", () => {
  const pend = state.pending;
  if (!pend || pend.kind !== "vm") return;
  planVm({ pid: pend.plan.pid, start_time: pend.plan.start_time }, pend.plan.action, $("#confirm-cascade").checked);
});

$("#confirm-dialog").addEventListener("close", async () => {
  const pend = state.pending;
  state.pending = null;
  if ($("#confirm-dialog").returnValue !== "go" || !pend) return;
  if (pend.kind === "vm") return runVm(pend.plan);
  const ids = [...state.selected];
  state.busy = true; updateSelection();
  $("#result").classList.add("hidden");
  $("#progress").classList.remove("hidden");
  $("#progress-fill").style.width = "0";
  $("#progress-text").textContent = "Starting…";
  try {
    // The fingerprint of what was shown: if a scan changed the plan since, nothing runs.
    const out = await invoke("execute_reclaim", { ids, digest: pend.digest });
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

async function runVm(plan) {
  const box = $("#vm-result");
  box.className = "result";
  box.replaceChildren(el("p", { text: `${plan.ok}: ${plan.target}…` }));
  try {
    const out = await invoke("execute_vm_action", { pid: plan.pid, startTime: plan.start_time, action: plan.action, cascade: plan.cascade, digest: plan.digest });
    const ok = out.steps.length && out.steps.every((s) => s.status === "done") && !out.journal_error;
    box.className = `result${ok ? "" : " partial"}`;
    box.replaceChildren(
      el("h2", { text: `${ok ? "Done" : "Not done"}: ${out.command} ${out.target}` }),
      el("ul", { class: "small" }, out.steps.map((s) => el("li", { dataset: { status: s.status } }, `${s.status}: ${s.summary} — ${s.message}`))),
      ...(out.journal_error ? [el("p", { class: "small", text: out.journal_error })] : []));
  } catch (e) {
    box.className = "result partial";
    box.replaceChildren(el("h2", { text: `Not done: ${plan.command} ${plan.target}` }), el("p", { text: String(e) }));
  } finally {
    refresh();
  }
}

function showResult(out) {
  const removed = out.steps.filter((s) => s.status === "removed");
  const other = out.steps.filter((s) => s.status !== "removed");
  const box = $("#result");
  box.className = `result${other.length ? " partial" : ""}`;
  box.replaceChildren(
    el("h2", {}, "Freed ", el("span", { id: "result-measured", text: bytes(out.measured_bytes) })),
    el("p", { class: "small" }, `Removed ${removed.length} item${removed.length === 1 ? "" : "s"}; estimated `, el("span", { id: "result-estimated", text: bytes(out.estimated_bytes) }), ", measured ", bytes(out.measured_bytes), "."),
    ...(other.length ? [el("ul", { class: "small" }, other.map((s) => el("li", { text: `${s.status}: ${s.path} — ${s.message}` })))] : []),
    ...(out.refused.length ? [el("p", { class: "small muted", text: `${out.refused.length} selected item${out.refused.length === 1 ? " was" : "s were"} not included (protected or not verified).` })] : []),
    ...(out.journal_error ? [el("p", { class: "small", text: out.journal_error })] : []));
}

listen("reclaim-progress", (e) => {
  const p = e.payload;
  $("#progress-fill").style.width = `${(p.done / Math.max(p.total, 1)) * 100}%`;
  $("#progress-text").textContent = `${p.done} of ${p.total}: ${p.path}`;
});

// ---- history and settings --------------------------------------------------------------------

// The core journal: every run of every surface (this window, the tray, the CLI, uninstall), as
// `smolsweep history` prints it.
async function loadHistory() {
  const h = await invoke("get_history");
  const list = $("#history-list");
  const notes = [];
  if (h.error) notes.push(el("p", { class: "problem small", text: h.error }));
  if (h.journal) notes.push(el("p", { class: "muted small" }, "Journal: ", el("code", { text: h.journal }), " (also read by ", el("code", { text: "smolsweep history" }), ")."));
  if (h.legacy) notes.push(el("p", { class: "muted small" }, "Reclaims recorded by older versions of this window are in ", el("code", { text: h.legacy }), "; they were not imported."));
  if (h.damaged_lines.length) notes.push(el("p", { class: "muted small", text: `${h.damaged_lines.length} damaged journal line(s) skipped.` }));
  $("#history-note").replaceChildren(...notes);
  if (!h.runs.length) { list.replaceChildren(el("div", { class: "empty", text: "Nothing has run yet." })); return; }
  list.replaceChildren(el("div", { class: "group" }, el("table", {}, el("tbody", {}, h.runs.map((r) => {
    const counts = [`${r.done} done`, r.skipped ? `${r.skipped} skipped` : "", r.failed ? `${r.failed} failed` : ""].filter(Boolean).join(", ");
    const outcomes = r.outcomes.map((o) => el("div", { class: "reason", dataset: { outcome: o.outcome } },
      `${o.outcome}: ${o.summary}${o.why ? ` — ${o.why}` : ""}${o.error ? ` — ${o.error}` : ""}`));
    return el("tr", { dataset: { plan: r.plan_id } },
      el("td", { text: new Date(r.started_at_ms).toLocaleString() }),
      el("td", { class: "origin", text: r.origin ? `${r.origin.surface} · ${r.origin.command}` : "—" }),
      el("td", {}, el("div", { text: `${r.planned_actions} planned: ${counts}` }), outcomes),
      el("td", { class: "size", text: !r.finished ? "did not finish" : r.freed_bytes || r.estimated_bytes ? bytes(r.freed_bytes) : "—" }),
      el("td", { class: "size muted", text: r.estimated_bytes ? `est. ${bytes(r.estimated_bytes)}` : "" }));
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
