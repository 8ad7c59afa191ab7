// Smolsweep window. Renders the core's view (`smolsweep::view::ScanView`, served in every
// status) and sends selections; every number, label, reason, verdict word and confirmation text
// comes from the core. Talks to the shell only through its commands and events.
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

// ---- words ------------------------------------------------------------------------------------

// The window's fixed words are the core's (`smolsweep::view::words`), sent once at start by
// `get_words`: `w(key)` is one, `w(key, { what })` one with its holes filled with data as it
// is; `wn(key, { hole: node })` the same as nodes, a hole standing for an element. The page's
// own elements name theirs with `data-word` (their content; `data-inline`: the element itself
// gives way to the word), `data-hole` (an element kept in its hole) and
// `data-word-title` / `data-word-aria-label` / `data-word-placeholder`.
let WORDS = {};
function w(key, holes) {
  const t = WORDS[key];
  if (t === undefined) return key;
  return holes ? t.replace(/\{(\w+)\}/g, (m, h) => (h in holes ? String(holes[h]) : m)) : t;
}
function wn(key, holes = {}) {
  return w(key).split(/\{(\w+)\}/).flatMap((part, i) => (i % 2 ? [holes[part] ?? `{${part}}`] : part ? [part] : [])).flat();
}
function fillWords(root = document) {
  for (const e of $$("[data-word]", root)) {
    const holes = {};
    for (const h of $$("[data-hole]", e)) holes[h.dataset.hole] = h;
    const nodes = wn(e.dataset.word, holes);
    if (e.hasAttribute("data-inline")) e.replaceWith(...nodes); else e.replaceChildren(...nodes);
  }
  for (const a of ["title", "aria-label", "placeholder"]) {
    for (const e of $$(`[data-word-${a}]`, root)) e.setAttribute(a, w(e.getAttribute(`data-word-${a}`)));
  }
}
const wordsReady = invoke("get_words").then((t) => { WORDS = t; fillWords(); });

// `pending` is what the open confirmation would run: a reclaim ({ kind: "reclaim", digest }) or a
// VM / machine action ({ kind: "vm", plan }), each with the fingerprint of the core plan it shows.
let state = { status: null, selected: new Set(), touched: false, busy: false, pending: null, estimateSeq: 0 };

let toastTimer;
function toast(msg) {
  const t = $("#toast");
  t.textContent = msg;
  t.classList.remove("hidden");
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => t.classList.add("hidden"), 6000);
}

// ---- navigation -------------------------------------------------------------------------------

function show(view, focus) {
  if (!$(`#view-${view}`)) view = "overview";
  state.view = view;
  $$(".view").forEach((v) => v.classList.toggle("active", v.id === `view-${view}`));
  $$("nav button[data-view]").forEach((b) => {
    b.classList.toggle("active", b.dataset.view === view);
    if (b.dataset.view === view) b.setAttribute("aria-current", "page"); else b.removeAttribute("aria-current");
  });
  if (view === "history") loadHistory();
  if (view === "findings") fitPaths();
  if (view === "settings") loadSettings();
  // Moving to a view from inside the page (not from the nav) puts the focus on its heading.
  if (focus) { const h = $(`#view-${view} h1`); if (h) h.focus(); }
}

$$("nav button[data-view]").forEach((b) => b.addEventListener("click", () => show(b.dataset.view)));
$("#overview-review").addEventListener("click", () => show("findings", true));

// ---- status -----------------------------------------------------------------------------------

// The products' names are the core's (`Product::display_name`), filled into every place the
// page names one.
function renderProductNames(names) {
  for (const e of $$("[data-product-name]")) e.textContent = (names || {})[e.dataset.productName] || "";
}

function render(status) {
  state.status = status;
  renderProductNames(status.product_names);
  const v = status.view;
  $("#scan-state").textContent = status.scan_state;
  const line = $("#status-line");
  line.textContent = status.tray.status;
  line.classList.toggle("warn", !!status.tray.cannot_verify);
  renderBanners(status);
  if (!v) {
    $("#findings-list").replaceChildren(el("div", { class: "empty", text: status.error || w("scanning") }));
    return;
  }
  const t = v.totals;
  $("#t-reclaimable").textContent = t.reclaimable;
  $("#t-reclaimable-n").textContent = t.reclaimable_items;
  $("#t-optin").textContent = t.opt_in;
  $("#t-optin-n").textContent = t.opt_in_items;
  $("#t-orphans").textContent = String(t.orphan_processes);
  $("#t-held").textContent = t.held_line;
  renderCompact(v, status.window);
  $("#nav-count").textContent = t.findings ? String(t.findings) : "";
  // The core's one count of running VMs (this HOME's; other HOMEs' apart), as the tray, the
  // CLI and browse show it.
  $("#nav-vms").textContent = v.vms.running ? String(v.vms.running) : "";
  $("#vms-count").textContent = v.vms_line;
  renderChart(v);
  renderTreemap(status);
  loadTrend();
  renderNextSteps(v);
  renderFindings(v);
  renderVms(v);
}

// Space inside disks (opt-in, never in the reclaimable total): the core's figure and line, and
// the compaction of every disk with something to give back.
function renderCompact(v, win) {
  const c = v.compact;
  $("#c-label").textContent = win.compact_card;
  $("#t-compact").textContent = c.size;
  $("#t-compact-line").textContent = c.line || c.detail || "";
  const b = $("#compact-btn");
  b.classList.toggle("hidden", !win.compact_button);
  b.textContent = win.compact_button || "";
}
$("#compact-btn").addEventListener("click", () => planCompact(null, $("#compact-result")));

// Banners on every view: a product the scan cannot vouch for (newer than known, an inventory
// that does not prove itself), with the core's sentence.
function renderBanners(status) {
  const v = status.view;
  const out = [];
  for (const p of v ? v.products : []) {
    if (!p.problems.length) continue;
    const newer = (status.newer || []).includes(p.product);
    out.push(el("div", { class: "banner", role: "status", dataset: { product: p.product, newer: newer ? "1" : "" } },
      el("b", { text: `${p.name}: ` }), p.problems.join(" "),
      newer ? el("button", { class: "secondary small", type: "button", onclick: () => show("settings", true) }, w("settings_accept_newer", { product: p.name })) : null));
  }
  if (status.auto) {
    const a = status.auto;
    out.unshift(el("div", { class: "banner", role: "status", id: "auto-banner" },
      el("b", { text: `${w("auto_waits")} ` }),
      a.banner,
      el("button", { class: "secondary small", type: "button", onclick: () => show("settings", true) }, w("review"))));
  }
  $("#banners").replaceChildren(...out);
  renderAuto(status);
  renderKeeps(status);
  renderFilter(status);
}

// The waiting automatic run: the core's confirmation of the policy's plan, run on "Run it".
function renderAuto(status) {
  const box = $("#auto-preview");
  const a = status.auto;
  if (!a) { box.replaceChildren(); return; }
  box.replaceChildren(el("div", { class: "result", dataset: { reason: a.reason } },
    el("p", { class: "status", text: a.status }),
    el("p", { text: a.headline }),
    el("ul", { class: "small" }, a.lines.slice(0, 20).map((l) => el("li", { text: l }))),
    el("button", { type: "button", id: "auto-run", class: "danger", onclick: async () => {
      try { const out = await invoke("confirm_auto", { digest: a.digest }); toast(out.summary); refresh(); } catch (e) { toast(String(e)); refresh(); }
    } }, a.run_label)));
}

function renderKeeps(status) {
  const list = $("#keep-list");
  const rules = status.keeps || [];
  if (!rules.length) { list.replaceChildren(el("p", { class: "muted small", text: w("nothing_kept") })); return; }
  list.replaceChildren(el("ul", { class: "keep-list" }, rules.map((r) => el("li", { dataset: { rule: r.id } },
    el("span", { text: `${r.line} ` }),
    el("button", { type: "button", class: "secondary small", "aria-label": w("stop_keeping", { what: r.what }), onclick: async () => {
      try { render(await invoke("remove_keep", { id: r.id })); } catch (e) { toast(String(e)); }
    } }, w("remove"))))));
}

function renderFilter(status) {
  const sel = $("#f-kind");
  const want = (status.filter.kinds || [])[0] || "";
  const opts = [el("option", { value: "", text: w("every_kind") }), ...(status.kinds || []).map((k) => el("option", { value: k.kind, text: k.label }))];
  if (want && !(status.kinds || []).some((k) => k.kind === want)) opts.push(el("option", { value: want, text: want }));
  sel.replaceChildren(...opts);
  sel.value = want;
  if (document.activeElement !== $("#f-age")) $("#f-age").value = status.filter.older_than || "";
  if (document.activeElement !== $("#f-size")) $("#f-size").value = status.filter.min_size || "";
  $("#f-product").value = (status.filter.products || [])[0] || "";
  $("#f-count").textContent = (status.view && status.view.filter_line) || "";
}

// The filter is the core's (`smolsweep::filter::Filter`): the window only sends the controls.
async function applyFilter() {
  const filter = {
    older_than: $("#f-age").value.trim(),
    min_size: $("#f-size").value.trim(),
    products: $("#f-product").value ? [$("#f-product").value] : [],
    kinds: $("#f-kind").value ? [$("#f-kind").value] : [],
  };
  try { render(await invoke("set_filter", { filter })); } catch (e) { toast(String(e)); }
}
$("#filter-form").addEventListener("change", applyFilter);
$("#filter-form").addEventListener("submit", (e) => { e.preventDefault(); applyFilter(); });
$("#f-clear").addEventListener("click", () => { $("#f-age").value = ""; $("#f-size").value = ""; $("#f-product").value = ""; $("#f-kind").value = ""; applyFilter(); });

// The legend is the core's: the largest kinds, every small or empty kind folded into "Other",
// each with its share of the bar and the verdict of most of its bytes, whose colour it takes
// (the verdict colours of style.css, as the treemap and the badges use them).
function renderChart(v) {
  const chart = $("#space-chart");
  if (!v.legend.length) { chart.replaceChildren(el("div", { class: "empty", text: w("nothing_holds_space") })); return; }
  const bar = el("div", { class: "bar", "aria-hidden": "true" });
  const legend = el("ul", { class: "legend", "aria-label": w("space_by_kind") });
  v.legend.forEach((e) => {
    const seg = el("div", { class: "seg", title: e.title, dataset: { verdict: e.verdict } });
    seg.style.width = `${e.percent}%`;
    bar.append(seg);
    legend.append(el("li", { dataset: { label: e.label, verdict: e.verdict }, title: e.verdict_word }, el("i", { "aria-hidden": "true", dataset: { verdict: e.verdict } }), e.line));
  });
  chart.replaceChildren(bar, legend);
}

// The core's treemap (`smolsweep::view::treemap`): positions are the core's, scaled to the box.
const TM_W = 1000, TM_H = 260;
function renderTreemap(status) {
  const box = $("#treemap");
  const tiles = status.treemap || [];
  if (!tiles.length) { box.replaceChildren(el("div", { class: "empty", text: w("nothing_to_draw") })); return; }
  box.replaceChildren(...tiles.map((t) => {
    const name = t.name;
    const tip = w("tile_tip", { path: t.path, kind: t.kind_label, verdict: t.verdict_label, size: t.size, apparent: t.apparent });
    const tile = el("button", { type: "button", class: `tile ${t.verdict}`, title: tip, "aria-label": w("tile_select", { name, size: t.size, verdict: t.verdict_label }), dataset: { id: t.id, verdict: t.verdict } },
      t.w > 40 && t.h > 14 ? name : "");
    tile.style.left = `${(t.x / TM_W) * 100}%`;
    tile.style.top = `${(t.y / TM_H) * 100}%`;
    tile.style.width = `${(t.w / TM_W) * 100}%`;
    tile.style.height = `${(t.h / TM_H) * 100}%`;
    tile.addEventListener("click", () => pickFinding(t.id));
    return tile;
  }));
}

// The core's space history (`smolsweep::view::TrendView`): each product's band (its place
// across and its bottom and top, as shares of the chart) and every label are the core's; this
// only scales them to the box. The table under it is the same series for screen readers.
const TR_W = 1000, TR_H = 200;
const SVG_NS = "http://www.w3.org/2000/svg";
function svgEl(tag, attrs = {}, title) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (title) { const t = document.createElementNS(SVG_NS, "title"); t.textContent = title; e.append(t); }
  return e;
}
const trX = (x) => x * TR_W;
const trY = (y) => (1 - y) * TR_H;

async function loadTrend() {
  let tv;
  try { tv = await invoke("get_trend"); } catch (e) { return; }
  renderTrend(tv);
}

function renderTrend(tv) {
  $("#trend-sentence").textContent = tv.sentence || tv.empty || "";
  $("#trend-notice").textContent = tv.notice || "";
  $("#trend-span").textContent = tv.axis || "";
  const chart = svgEl("svg", { viewBox: `0 0 ${TR_W} ${TR_H}`, preserveAspectRatio: "none", class: "trend-svg" });
  for (const s of tv.products) {
    if (!s.rows.length) continue;
    const top = s.rows.map((r) => `${trX(r.x)},${trY(r.y1)}`);
    const bottom = s.rows.slice().reverse().map((r) => `${trX(r.x)},${trY(r.y0)}`);
    chart.append(svgEl("polygon", { points: top.concat(bottom).join(" "), class: `band ${s.product}` }, s.name));
    for (const r of s.rows) {
      chart.append(svgEl("circle", { cx: trX(r.x), cy: trY(r.y1), r: 4, class: `dot ${s.product}`, "data-at": r.at, "data-product": s.product }, r.label));
    }
  }
  for (const f of tv.freed) {
    if (f.x < 0 || f.x > 1) continue;
    chart.append(svgEl("line", { x1: trX(f.x), x2: trX(f.x), y1: 0, y2: TR_H, class: "freed", "data-at": f.at }, f.label));
  }
  const legend = el("ul", { class: "legend trend-legend", "aria-hidden": "true" },
    tv.products.filter((s) => s.rows.length).map((s) => el("li", {}, el("i", { class: `swatch ${s.product}` }), s.name)));
  $("#trend-chart").replaceChildren(chart, legend);
  renderTrendTable(tv);
}

function renderTrendTable(tv) {
  const parts = [];
  for (const s of tv.products) {
    if (!s.rows.length) continue;
    parts.push(el("table", { class: "trend-table", dataset: { product: s.product } },
      el("caption", { text: s.name }),
      el("thead", {}, el("tr", {}, tv.columns.map((c) => el("th", { scope: "col", text: c })))),
      el("tbody", {}, s.rows.map((r) => el("tr", {}, r.cells.map((c, i) => el(i ? "td" : "th", i ? { text: c } : { scope: "row", text: c })))))));
  }
  if (tv.freed.length) parts.push(el("ul", { class: "trend-freed", "aria-label": w("reclaimed") }, tv.freed.map((f) => el("li", { text: f.label }))));
  $("#trend-table").replaceChildren(...parts);
}

// Select a finding (when it can be selected) and show it in the list.
function pickFinding(id) {
  show("findings");
  const row = $(`tr.finding[data-id="${CSS.escape(id)}"]`);
  if (!row) { toast(w("not_in_list")); return; }
  const box = $("input.select", row);
  if (box && !box.disabled && !box.checked) {
    state.touched = true;
    box.checked = true;
    state.selected.add(id);
    updateSelection();
  }
  $$("tr.finding.picked").forEach((r) => r.classList.remove("picked"));
  row.classList.add("picked");
  row.scrollIntoView({ block: "center" });
  (box && !box.disabled ? box : row).focus();
}

function renderNextSteps(v) {
  const box = $("#next-steps");
  box.replaceChildren(...(v.next_steps.length ? [el("h2", { text: w("from_command_line") }), el("ul", { class: "small" }, v.next_steps.map((s) => el("li", { text: s })))] : []));
}

async function copyPath(path) {
  try {
    await navigator.clipboard.writeText(path);
  } catch (_) {
    const ta = el("textarea", { "aria-hidden": "true", class: "offscreen" });
    ta.value = path;
    document.body.append(ta);
    ta.select();
    document.execCommand("copy");
    ta.remove();
  }
  toast(w("copied_path", { path }));
}

// "Keep": a core keep rule for a finding or a machine, with an optional why; then a rescan.
function keepControl(request, what) {
  const wrap = el("div", { class: "keep-form" });
  const start = el("button", { type: "button", class: "secondary small keep", "aria-label": w("keep_what", { what }), title: w("keep_title") }, w("keep"));
  start.addEventListener("click", () => {
    const why = el("input", { size: 14, placeholder: w("why_optional"), "aria-label": w("why_keep", { what }) });
    const ok = el("button", { type: "button", class: "primary small keep-ok", "aria-label": w("keep_now", { what }) }, w("keep"));
    const go = async () => {
      try { render(await invoke("keep_item", { request, why: why.value })); toast(w("kept_what", { what })); } catch (e) { toast(String(e)); }
    };
    ok.addEventListener("click", go);
    why.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); go(); } });
    wrap.replaceChildren(why, ok);
    why.focus();
  });
  wrap.append(start);
  return wrap;
}

// "Why?": the core's answer for a row (the sentences `smolsweep why` prints), under their labels,
// with the command that frees it to copy.
async function showWhy(target, what, from) {
  let answer;
  try { answer = await invoke("why_of", { target }); } catch (e) { toast(String(e)); return; }
  const p = answer.panel;
  $("#why-title").textContent = w("why_what", { what });
  const rows = p.sections.map((sec) => {
    const paras = [];
    let items = null;
    for (const l of sec.lines) {
      if (l.item) {
        if (!items) { items = el("ul", { class: "why-items" }); paras.push(items); }
        items.append(el("li", { text: l.text }));
      } else {
        items = null;
        paras.push(el("p", { text: l.text }));
      }
    }
    return sec.label
      ? [el("dt", { text: sec.label }), el("dd", {}, paras)]
      : [el("dd", { class: "why-head" }, paras)];
  });
  const cmd = (label, c, copyLabel) => [el("dt", { text: label }), el("dd", { class: "why-command" }, el("code", { text: c }), " ",
    el("button", { type: "button", class: "copy small", "aria-label": copyLabel, onclick: () => copyPath(c) }, p.copy))];
  if (p.command) rows.push(cmd(p.command_label, p.command, p.copy_command));
  if (p.only_this) rows.push(cmd(p.command_label, p.only_this, p.copy_only_this));
  $("#why-body").replaceChildren(el("dl", { class: "why" }, rows.flat()));
  const d = $("#why-dialog");
  d.returnTo = from;
  d.showModal();
}

function whyButton(target, what) {
  const b = el("button", { type: "button", class: "secondary small why", "aria-label": w("why_what", { what }), title: w("why_title") }, w("why"));
  b.addEventListener("click", () => showWhy(target, what, b));
  return b;
}

$("#why-dialog").addEventListener("close", () => {
  const d = $("#why-dialog");
  if (d.returnTo && d.returnTo.isConnected) d.returnTo.focus();
});

// A path shortened from the middle to fit its line: the core offers it at a few widths
// (`view::window::path_fits`), the longest that fits on one line is shown.
function pathCell(row, extra, more) {
  const fits = ((state.status.window || {}).paths || {})[row.id];
  return el("td", {},
    el("div", { class: "pathline" },
      el("span", { class: "path", title: row.path, text: row.short_path, dataset: fits ? { fits: JSON.stringify(fits) } : {} }),
      el("button", { type: "button", class: "copy small", "aria-label": w("copy_path", { path: row.path }), title: w("copy_full_path"), onclick: () => copyPath(row.path) }, w("copy"))),
    el("div", { class: "reason", text: row.reason }), extra, more);
}

function fitPaths() {
  for (const e of $$(".path[data-fits]")) {
    if (!e.clientWidth) continue;
    const fits = JSON.parse(e.dataset.fits);
    let i = 0;
    e.textContent = fits[0];
    while (i < fits.length - 1 && e.scrollWidth > e.clientWidth) e.textContent = fits[++i];
  }
}
// Fitted again whenever the list's width changes (the window resized, a view shown).
let fitTimer;
const refit = () => { clearTimeout(fitTimer); fitTimer = setTimeout(() => requestAnimationFrame(fitPaths), 30); };
window.addEventListener("resize", refit);
new ResizeObserver(refit).observe($("#findings-list"));

function renderFindings(v) {
  // Default selection: what the core selects by default; kept across rescans once touched.
  const rows = v.groups.flatMap((g) => g.rows);
  const byId = new Map(rows.map((r) => [r.id, r]));
  if (!state.touched) state.selected = new Set(rows.filter((r) => r.selected_by_default).map((r) => r.id));
  state.selected = new Set([...state.selected].filter((id) => byId.has(id) && byId.get(id).selectable));
  if (!v.groups.length) { $("#findings-list").replaceChildren(el("div", { class: "empty", text: w("nothing_to_reclaim") })); updateSelection(); return; }
  const out = [];
  v.groups.forEach((g, gi) => {
    const hid = `group-h-${gi}`;
    const trs = g.rows.map((f) => {
      const box = el("input", {
        type: "checkbox", class: "select", "aria-label": w("select_path", { path: f.path }),
        disabled: !f.selectable, checked: f.selectable && state.selected.has(f.id),
        title: f.effect,
      });
      box.addEventListener("change", () => {
        state.touched = true;
        if (box.checked) state.selected.add(f.id); else state.selected.delete(f.id);
        updateSelection();
      });
      const size = f.apparent
        ? el("td", { class: "size" }, f.size, el("div", { class: "reason", text: w("apparent", { size: f.apparent }) }))
        : el("td", { class: "size", text: f.size });
      const kept = (state.status.kept || {})[f.id];
      const keptLine = kept ? el("div", { class: "kept-line small", text: kept.kept_line }) : null;
      return el("tr", { class: `finding ${f.verdict}`, dataset: { id: f.id, verdict: f.verdict, kept: kept ? kept.id : "" } },
        el("td", { class: "sel" }, box),
        pathCell(f, el("div", { class: "effect small muted", text: f.effect }), keptLine),
        el("td", { class: "verdict" },
          kept ? el("span", { class: "badge kept", text: w("kept_by_you") }) : el("span", { class: `badge ${f.verdict}`, text: f.verdict_label }),
          kept ? null : keepControl({ by: "finding", id: f.id }, f.path),
          whyButton({ by: "finding", id: f.id }, f.path)),
        size);
    });
    out.push(el("section", { class: "group", "aria-labelledby": hid, dataset: { kind: g.kind } },
      el("header", {},
        el("h2", { id: hid, class: "group-title", text: g.label }),
        el("span", { class: "muted small", text: g.risk_label }),
        el("span", { class: "size", text: g.count_line })),
      el("p", { class: "meaning small muted", text: g.meaning }),
      el("table", { "aria-labelledby": hid }, el("tbody", {}, trs))));
  });
  $("#findings-list").replaceChildren(...out);
  fitPaths();
  updateSelection();
}

// The button's total is the planner's number for the selection (hard links once), asked of the
// core for every change.
async function updateSelection() {
  const ids = [...state.selected];
  const btn = $("#reclaim-btn");
  const seq = ++state.estimateSeq;
  if (!ids.length || !state.status || !state.status.view) {
    $("#selection-summary").textContent = w("nothing_selected");
    btn.disabled = true;
    btn.textContent = w("reclaim_button");
    return;
  }
  let c;
  try { c = await invoke("selection_estimate", { ids }); } catch (e) { toast(String(e)); return; }
  if (seq !== state.estimateSeq) return;
  $("#selection-summary").textContent = c.selected_line;
  btn.disabled = state.busy || !c.lines.length;
  btn.textContent = c.reclaim_label;
  btn.dataset.estimate = c.estimate;
}

// This HOME's machines and VM processes first; other HOMEs' VM processes folded into one group
// with the core's count (they are shown only: every action on them would be refused).
function renderVms(v) {
  const list = $("#vms-list");
  const win = state.status.window || {};
  if (!v.machines.length && !v.processes.length) { list.replaceChildren(el("div", { class: "empty", text: w("no_vms") })); return; }
  const parts = [];
  if (v.machines.length) {
    const rows = v.machines.map((m) => {
      const label = m.label;
      const button = (action, text, name, cls) => el("button", { type: "button", class: cls, dataset: { action }, "aria-label": name, onclick: () => planMachine(m, action, false) }, text);
      const meta = [m.pid ? w("pid", { pid: m.pid }) : "", m.size ? m.size : "", m.compactable || ""].filter(Boolean).join(" · ");
      return el("div", { class: "vm machine", role: "listitem", dataset: { product: m.product, name: m.name, stale: m.stale ? "1" : "" } },
        el("div", {},
          el("div", {}, el("b", { text: m.label }), " ",
            el("span", { class: `badge ${m.stale ? "orphan" : "state"}`, text: m.state_label }),
            m.role ? el("span", { class: "badge role", text: m.role }) : null),
          meta ? el("div", { class: "meta", text: meta }) : null,
          m.kept ? el("div", { class: "meta kept", text: m.kept }) : null),
        el("div", { class: "buttons" },
          whyButton({ by: "machine", product: m.product, name: m.name }, label),
          keepControl({ by: "machine", product: m.product, name: m.name }, label),
          m.compactable ? el("button", { type: "button", class: "secondary", dataset: { action: "compact" }, "aria-label": m.compact_label, onclick: () => planCompact({ product: m.product, name: m.name }, $("#vm-result")) }, win.compact_machine) : null,
          m.can_stop ? button("stop", w("stop"), m.stop_label, "secondary") : null,
          m.can_delete ? button("delete", w("delete"), m.delete_label, "danger") : null));
    });
    parts.push(el("h2", { id: "h-machines", text: v.machines_heading }), el("div", { class: "group", role: "list", "aria-labelledby": "h-machines" }, rows));
  }
  const processRow = (p) => {
    const who = p.owner || w("pid", { pid: p.pid });
    const meta = [w("pid", { pid: p.pid }), p.what, p.held_deleted ? w("holds_deleted", { size: p.held_deleted }) : ""].filter(Boolean).join(" · ");
    return el("div", { class: "vm process", role: "listitem", dataset: { pid: p.pid, home: p.this_home ? "this" : "other" } },
      el("div", {},
        el("div", {}, el("b", { text: who }), " ",
          el("span", { class: `badge ${p.orphan ? "orphan" : "state"}`, text: p.orphan ? w("orphaned") : w("running") })),
        el("div", { class: "meta", text: meta }),
        p.reason ? el("div", { class: "meta", text: p.reason }) : null,
        p.kept ? el("div", { class: "meta kept", text: p.kept }) : null),
      el("div", { class: "buttons" },
        p.this_home ? whyButton({ by: "process", pid: p.pid }, w("process", { pid: p.pid })) : null,
        p.can_end ? el("button", { type: "button", class: "danger", dataset: { action: "reap" }, "aria-label": w("end_process_of", { pid: p.pid, who }), onclick: () => planVm(p, "reap", false) }, w("end_process")) : null));
  };
  const mine = v.processes.filter((p) => p.this_home);
  const others = v.processes.filter((p) => !p.this_home);
  if (mine.length) {
    parts.push(el("h2", { id: "h-processes", text: w("vm_processes") }), el("div", { class: "group", role: "list", "aria-labelledby": "h-processes" }, mine.map(processRow)));
  }
  if (others.length) {
    const open = !!($("#other-homes") || {}).open;
    parts.push(el("details", { id: "other-homes", class: "group other-homes", open },
      el("summary", { id: "h-other-homes", text: v.other_homes_line }),
      el("div", { role: "list", "aria-labelledby": "h-other-homes" }, others.map(processRow))));
  }
  list.replaceChildren(...parts);
}

// ---- confirmations ----------------------------------------------------------------------------

// One confirmation for everything that acts: it shows the core's confirmation of the plan
// (headline, estimate, what runs, what was not planned and why) and carries the plan's
// fingerprint; the shell runs the plan only if it still has that fingerprint.
let returnFocus = null;
let opener = null;
function rememberOpener() { opener = { el: document.activeElement, key: focusKey(document.activeElement) }; }
// A way back to the control that opened a dialog, also after a rescan redrew it.
function focusKey(e) {
  if (!e || e === document.body) return null;
  if (e.id) return `#${CSS.escape(e.id)}`;
  const row = e.closest(".vm");
  if (row && e.dataset.action) {
    const k = row.dataset.pid ? `.vm[data-pid="${row.dataset.pid}"]` : `.vm[data-product="${row.dataset.product}"][data-name="${CSS.escape(row.dataset.name)}"]`;
    return `${k} button[data-action="${e.dataset.action}"]`;
  }
  return null;
}
function openConfirm({ title, confirmation, items, refused, go, enabled, cascade }) {
  $("#confirm-title").textContent = title;
  $("#confirm-headline").textContent = confirmation.headline;
  $("#confirm-estimate").textContent = confirmation.estimate;
  $("#confirm-about").classList.toggle("hidden", !confirmation.estimate_bytes);
  $("#confirm-list").replaceChildren(...items);
  $("#confirm-list").classList.toggle("hidden", !items.length);
  $("#confirm-note").textContent = confirmation.note;
  $("#confirm-refused").replaceChildren(...(refused.length
    ? [el("p", { class: "small muted", text: w("not_planned") }), el("ul", { class: "small" }, refused.map((x) => el("li", { text: x.line })))]
    : []));
  $("#confirm-cascade-row").classList.toggle("hidden", cascade === undefined);
  $("#confirm-cascade").checked = !!cascade;
  $("#confirm-go").disabled = !enabled;
  $("#confirm-go").textContent = go;
  const d = $("#confirm-dialog");
  // Closing with Escape keeps the previous returnValue: start from none, so only "go" runs.
  if (!d.open) {
    // What opened it, remembered before the plan was asked for (a rescan may have redrawn it).
    returnFocus = opener || { el: document.activeElement, key: focusKey(document.activeElement) };
    d.returnValue = "";
    d.showModal();
    // The focus starts on the safe choice.
    $("#confirm-cancel").focus();
  }
}

$("#reclaim-btn").addEventListener("click", async () => {
  const ids = [...state.selected];
  rememberOpener();
  let plan;
  try { plan = await invoke("plan_reclaim", { ids }); } catch (e) { toast(String(e)); return; }
  const c = plan.confirmation;
  state.pending = { kind: "reclaim", digest: plan.digest };
  openConfirm({
    title: c.reclaim_label.replace(/…$/, ""),
    confirmation: c,
    items: plan.steps.map((s) =>
      el("li", { dataset: { id: s.id }, title: s.path || null }, el("span", { class: "line", text: s.summary }))),
    refused: plan.refused,
    go: c.headline,
    enabled: plan.steps.length > 0,
  });
});

// Compact the disks of one machine (or every disk with something to give back): the core's plan
// and words; the result goes to `box`.
async function planCompact(machine, box) {
  rememberOpener();
  let ask;
  try { ask = await invoke("plan_compact", { machine }); } catch (e) { toast(String(e)); return; }
  const plan = ask.plan;
  state.pending = { kind: "compact", digest: plan.digest, machine, box };
  openConfirm({
    title: ask.title,
    confirmation: plan.confirmation,
    items: plan.steps.map((s) => el("li", { title: s.path || null }, el("span", { class: "line", text: s.summary }))),
    refused: plan.refused,
    go: ask.ok,
    enabled: plan.steps.length > 0,
  });
}

async function runCompact(pend) {
  const box = pend.box;
  box.className = "result";
  box.replaceChildren(el("p", { class: "small", text: `${$("#confirm-headline").textContent}…` }));
  try {
    const out = await invoke("execute_compact", { machine: pend.machine, digest: pend.digest });
    box.className = `result${out.partial ? " partial" : ""}`;
    box.replaceChildren(
      el("p", { class: "compact-summary", text: out.summary }),
      ...(out.other_lines.length ? [el("ul", { class: "small" }, out.other_lines.map((l) => el("li", { text: l })))] : []),
      ...(out.refused_line ? [el("p", { class: "small muted", text: out.refused_line })] : []),
      ...(out.journal_error ? [el("p", { class: "small", text: out.journal_error })] : []));
  } catch (e) {
    box.className = "result partial";
    box.replaceChildren(el("p", { text: String(e) }));
  } finally {
    refresh();
  }
}

function showVmPlan(plan, action) {
  state.pending = { kind: "vm", plan };
  openConfirm({
    title: plan.title,
    confirmation: plan.confirmation,
    items: plan.steps.map((s, i) => el("li", { dataset: { index: i } }, el("span", { class: "line", text: s }))),
    refused: plan.refused,
    go: plan.ok,
    enabled: plan.steps.length > 0,
    cascade: action === "delete" && (plan.cascade || plan.cascade_available) ? plan.cascade : undefined,
  });
}

// End process of one VM process: the shell scans, plans, and returns the plan to show.
async function planVm(p, action, cascade) {
  if (!$("#confirm-dialog").open) rememberOpener();
  let plan;
  try { plan = await invoke("plan_vm_action", { pid: p.pid, startTime: p.start_time, action, cascade }); }
  catch (e) { toast(String(e)); return; }
  showVmPlan(plan, action);
}

// Stop / Delete of a machine or sandbox (either product), through the core planner and the
// product's own CLI.
async function planMachine(m, action, cascade) {
  if (!$("#confirm-dialog").open) rememberOpener();
  let plan;
  try { plan = await invoke("plan_machine_action", { product: m.product, name: m.name, action, cascade }); }
  catch (e) { toast(String(e)); return; }
  showVmPlan(plan, action);
}

$("#confirm-cascade").addEventListener("change", () => {
  const pend = state.pending;
  if (!pend || pend.kind !== "vm") return;
  const cascade = $("#confirm-cascade").checked;
  if (pend.plan.machine) planMachine(pend.plan.machine, pend.plan.action, cascade);
  else planVm({ pid: pend.plan.pid, start_time: pend.plan.start_time }, pend.plan.action, cascade);
});

$("#confirm-dialog").addEventListener("close", async () => {
  const pend = state.pending;
  state.pending = null;
  // The focus goes back to what opened the dialog (when it is still on the page).
  if (returnFocus) {
    const back = document.contains(returnFocus.el) ? returnFocus.el : returnFocus.key ? $(returnFocus.key) : null;
    if (back) back.focus();
  }
  returnFocus = null;
  opener = null;
  if ($("#confirm-dialog").returnValue !== "go" || !pend) return;
  if (pend.kind === "vm") return runVm(pend.plan);
  if (pend.kind === "compact") return runCompact(pend);
  const ids = [...state.selected];
  state.busy = true; updateSelection();
  $("#result").classList.add("hidden");
  $("#progress").classList.remove("hidden");
  $("#progress-fill").style.width = "0";
  $("#progress-text").textContent = w("starting");
  try {
    // The fingerprint of what was shown: if a scan changed the plan since, nothing runs.
    const out = await invoke("execute_reclaim", { ids, digest: pend.digest });
    showResult(out);
    state.touched = false;
  } catch (e) {
    $("#result").className = "result partial";
    $("#result").replaceChildren(el("h2", { text: w("reclaim_failed") }), el("p", { text: String(e) }));
  } finally {
    state.busy = false;
    $("#progress").classList.add("hidden");
    refresh();
  }
});

async function runVm(plan) {
  const box = $("#vm-result");
  box.className = "result";
  box.replaceChildren(el("p", { text: plan.running_line }));
  try {
    const out = plan.machine
      ? await invoke("execute_machine_action", { product: plan.machine.product, name: plan.machine.name, action: plan.action, cascade: plan.cascade, digest: plan.digest })
      : await invoke("execute_vm_action", { pid: plan.pid, startTime: plan.start_time, action: plan.action, cascade: plan.cascade, digest: plan.digest });
    box.className = `result${out.partial ? " partial" : ""}`;
    box.replaceChildren(
      el("h2", { text: out.heading }),
      el("ul", { class: "small" }, out.steps.map((s, i) => el("li", { dataset: { status: s.status } }, out.lines[i]))),
      ...(out.journal_error ? [el("p", { class: "small", text: out.journal_error })] : []));
  } catch (e) {
    box.className = "result partial";
    box.replaceChildren(el("h2", { text: plan.not_done }), el("p", { text: String(e) }));
  } finally {
    refresh();
  }
}

function showResult(out) {
  const box = $("#result");
  box.className = `result${out.partial ? " partial" : ""}`;
  box.replaceChildren(
    el("h2", {}, wn("freed_measured", { measured: el("span", { id: "result-measured", text: out.measured }) })),
    el("p", { class: "small", id: "result-summary", text: out.summary }),
    ...(out.other_lines.length ? [el("ul", { class: "small" }, out.other_lines.map((l) => el("li", { text: l })))] : []),
    ...(out.refused_line ? [el("p", { class: "small muted", text: out.refused_line })] : []),
    ...(out.journal_error ? [el("p", { class: "small", text: out.journal_error })] : []));
}

listen("reclaim-progress", (e) => {
  const p = e.payload;
  $("#progress-fill").style.width = `${(p.done / Math.max(p.total, 1)) * 100}%`;
  $("#progress-text").textContent = w("progress_line", { done: p.done, total: p.total, path: p.path });
});

// ---- history and settings --------------------------------------------------------------------

// The core journal: every run of every surface (this window, the tray, the CLI, uninstall), as
// `smolsweep history` prints it.
async function loadHistory() {
  const h = await invoke("get_history");
  const list = $("#history-list");
  const notes = [];
  if (h.error) notes.push(el("p", { class: "problem small", text: h.error }));
  if (h.journal) notes.push(el("p", { class: "muted small" }, wn("history_journal", { journal: el("code", { text: h.journal }), command: el("code", { text: w("history_command") }) })));
  if (h.legacy) notes.push(el("p", { class: "muted small" }, wn("history_legacy", { legacy: el("code", { text: h.legacy }) })));
  if (h.damaged_line) notes.push(el("p", { class: "muted small", text: h.damaged_line }));
  for (const t of h.cut_lines || []) notes.push(el("p", { class: "muted small", text: t }));
  if (h.older_line) notes.push(el("p", { class: "muted small", text: h.older_line }));
  $("#history-note").replaceChildren(...notes);
  if (!h.runs.length) { list.replaceChildren(el("div", { class: "empty", text: w("nothing_has_run") })); return; }
  // One run per item: its head (time, origin, counts, what it freed) wraps onto lines of its
  // own on a narrow window instead of overlapping; its actions are the core's lines, a long run
  // folded after the first ones ("…and 24 more", opened on a click).
  list.replaceChildren(el("ol", { class: "group runs", "aria-label": w("runs_newest_first") }, h.runs.map((r) => {
    const line = (t) => el("li", { class: "outcome", text: t });
    const folded = r.more
      ? [el("details", { class: "more" }, el("summary", { text: r.more }), el("ul", { class: "outcomes" }, r.lines.slice(r.shown).map(line)))]
      : [];
    return el("li", { class: "run", dataset: { plan: r.plan_id } },
      el("div", { class: "run-head" },
        el("span", { class: "when", text: r.started }),
        el("span", { class: "origin", text: r.origin_line }),
        el("span", { class: "counts", text: r.counts }),
        el("span", { class: "freed", text: r.freed_line }),
        r.estimated_line ? el("span", { class: "estimated muted", text: r.estimated_line }) : null),
      el("ul", { class: "outcomes" }, r.lines.slice(0, r.shown).map(line)),
      ...folded);
  })));
}

// History is read again whenever any surface (this window, the tray, the command line, the
// uninstall, an automatic run) has journaled a run: the core's stamp of the journal changes.
// Asked only while History is shown.
let historyStamp = null;
async function historyChanged() {
  let stamp;
  try { stamp = await invoke("get_history_stamp"); } catch (e) { return; }
  if (stamp === historyStamp) return;
  historyStamp = stamp;
  await loadHistory();
}
setInterval(() => { if (state.view === "history") historyChanged(); }, 2000);

async function loadSettings() {
  const s = await invoke("get_settings");
  const sel = $("#s-interval");
  if (![...sel.options].some((o) => Number(o.value) === s.scan_interval_secs)) {
    sel.append(el("option", { value: s.scan_interval_secs, text: s.scan_interval_label }));
  }
  sel.value = String(s.scan_interval_secs);
  $("#s-notify").checked = s.notifications;
  $("#s-autostart").checked = s.autostart;
  $$(".s-class").forEach((c) => { c.checked = s.include_opt_in.includes(c.value); });
  $$(".s-newer").forEach((c) => { c.checked = (s.accept_newer || []).includes(c.value); });
  state.settings = s;
  $("#a-enabled").checked = s.auto.enabled;
  $("#a-age").value = s.auto.min_age;
  $("#a-cap").value = s.auto.ask_above;
  $$(".a-class").forEach((c) => { c.checked = (s.auto.include || []).includes(c.value); });
}

async function saveSettings() {
  const settings = {
    scan_interval_secs: Number($("#s-interval").value),
    notifications: $("#s-notify").checked,
    autostart: $("#s-autostart").checked,
    include_opt_in: $$(".s-class").filter((c) => c.checked).map((c) => c.value),
    accept_newer: $$(".s-newer").filter((c) => c.checked).map((c) => c.value),
    auto: {
      ...(state.settings ? state.settings.auto : {}),
      enabled: $("#a-enabled").checked,
      min_age: $("#a-age").value.trim(),
      ask_above: $("#a-cap").value.trim(),
      include: $$(".a-class").filter((c) => c.checked).map((c) => c.value),
    },
  };
  try {
    state.settings = await invoke("set_settings", { settings });
    $("#settings-saved").textContent = w("saved");
  } catch (e) {
    $("#settings-saved").textContent = String(e);
  }
}
$("#settings-form").addEventListener("change", saveSettings);
$("#settings-form").addEventListener("submit", (e) => e.preventDefault());

// ---- start ------------------------------------------------------------------------------------

async function refresh() { render(await invoke("get_status")); }

$("#rescan-btn").addEventListener("click", async () => {
  $("#scan-state").textContent = w("scanning");
  try { render(await invoke("rescan")); } catch (e) { $("#scan-state").textContent = String(e); }
});

// Nothing is drawn before the words are in.
wordsReady.then(() => {
  listen("status-updated", (e) => render(e.payload));
  listen("navigate", (e) => show(e.payload));
  show((location.hash || "#overview").slice(1));
  refresh();
});
