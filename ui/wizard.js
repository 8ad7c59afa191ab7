// The uninstall wizard: preflight → choices → plan → confirmation → progress → proof.
// Loaded after app.js and uses its helpers ($, $$, el, invoke, listen, toast, w, wn, wordsReady).
// Everything is done by the shell's uninstall_* commands, which call the core.
"use strict";

(() => {
  const wz = { page: "preflight", pre: null, plan: null, running: false, loaded: false, progress: 0, ticks: null, ticksSeq: 0 };
  const PAGES = ["preflight", "choices", "plan", "confirm", "progress", "proof"];
  // The uninstall commands return the core's preflight and plan with their words
  // (`view::uninstall`): each item's row, each step's size, the plan's tally and question, what
  // is left in place, each step's outcome, the run's freed sentence. Nothing here counts, sums,
  // formats bytes or words an outcome.

  function page(name) {
    wz.page = name;
    $$("#view-uninstall .wz-page").forEach((d) => d.classList.toggle("hidden", d.dataset.page !== name));
    const at = PAGES.indexOf(name);
    $$("#wz-steps li").forEach((li) => {
      const i = PAGES.indexOf(li.dataset.page);
      li.classList.toggle("current", i === at);
      li.classList.toggle("done", i < at);
      if (i === at) li.setAttribute("aria-current", "step"); else li.removeAttribute("aria-current");
    });
    const main = $("main");
    if (main) main.scrollTop = 0;
  }

  async function copyText(text, textarea) {
    try {
      if (navigator.clipboard && navigator.clipboard.writeText) {
        await navigator.clipboard.writeText(text);
        return true;
      }
    } catch (_) { /* fall back to the selection */ }
    if (textarea) {
      textarea.focus();
      textarea.select();
      try { if (document.execCommand("copy")) return true; } catch (_) { /* selected for the user */ }
    }
    return false;
  }

  // A command shown for the user to run (never run by Smolsweep), with a copy button.
  function cmdLine(command, why) {
    const code = el("code", { class: "wz-cmd", text: command });
    const btn = el("button", { class: "secondary small-btn", type: "button", text: w("copy") });
    btn.addEventListener("click", async () => {
      const ok = await copyText(command);
      if (!ok) {
        const r = document.createRange();
        r.selectNodeContents(code);
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(r);
      }
      btn.textContent = ok ? w("copied") : w("selected");
    });
    return el("li", { class: "wz-cmdrow" }, code, btn, why ? el("div", { class: "reason", text: why }) : null);
  }

  function section(title, items, empty) {
    const box = el("div", { class: "group wz-sec" }, el("header", {}, el("span", { text: title }), el("span", { class: "size", text: items.length ? String(items.length) : "" })));
    if (!items.length) box.append(el("div", { class: "wz-none muted small", text: empty || w("none_found") }));
    else box.append(el("ul", { class: "wz-items" }, items));
    return box;
  }

  const item = (main, detail, size) =>
    el("li", {}, el("div", { class: "wz-item" }, el("span", { class: "path", text: main }), size ? el("span", { class: "wz-size", text: size }) : null),
      detail ? el("div", { class: "reason", text: detail }) : null);
  // A row of the core's (`view::uninstall::Row`).
  const rowItem = (r) => item(r.main, r.detail, r.size);

  // ---- 1. preflight ---------------------------------------------------------------------------

  function renderPreflight(p) {
    const body = $("#wz-pre-body");
    const parts = [];
    parts.push(el("p", { class: "small" }, wn("audited_home", { home: el("code", { text: p.home }) })));
    const r = p.rows;
    parts.push(section(w("installations"), r.installs.map(rowItem), w("no_installation")));
    parts.push(section(w("state_directories"), r.state_dirs.map(rowItem), w("no_state_directory")));
    parts.push(section(w("machines"), r.machines.map(rowItem), w("no_machine")));
    parts.push(section(w("vm_processes_here"), r.processes.map(rowItem), w("no_vm_process")));
    parts.push(section(w("mounts"), r.mounts.map(rowItem), p.mounts_checked ? w("no_mount") : w("mount_table_unread")));
    parts.push(section(w("launchers"), r.launchers.map(rowItem), w("no_launcher")));
    parts.push(section(w("path_blocks"), r.path_blocks.map(rowItem), w("no_path_block")));
    parts.push(section(w("credentials_and_keys"), r.credentials.map(rowItem), w("none")));
    const sys = section(w("system_files"), r.system.map((s) => cmdLine(s.main, s.detail)), w("none"));
    if (r.system.length) sys.append(el("div", { class: "wz-none muted small", text: w("never_runs_these") }));
    parts.push(sys);
    if (p.problems.length) parts.push(...p.problems.map((e) => el("div", { class: "problem small", text: e })));
    body.replaceChildren(...parts);
  }

  async function loadPreflight() {
    wz.loaded = true;
    $("#wz-pre-next").disabled = true;
    $("#wz-pre-body").replaceChildren(el("div", { class: "empty", text: w("looking") }));
    page("preflight");
    try {
      const p = await invoke("uninstall_preflight");
      wz.pre = p;
      renderPreflight(p);
      $("#wz-pre-next").disabled = false;
    } catch (e) {
      $("#wz-pre-body").replaceChildren(el("div", { class: "problem", text: String(e) }));
    }
  }

  // ---- 2. choices -----------------------------------------------------------------------------

  function enterChoices() {
    const p = wz.pre;
    if (!$("input[name='wz-product']:checked")) {
      // The core's choice: the only product found here, else both.
      $(`input[name='wz-product'][value='${p.default_product}']`).checked = true;
    }
    const choice = (r) => el("li", {}, el("code", { text: r.main }), " ", r.detail);
    $("#wz-creds-list").replaceChildren(...p.rows.credential_choices.map(choice));
    $("#wz-pathblock-list").replaceChildren(...p.rows.path_block_choices.map(choice));
    page("choices");
  }

  // ---- 3. plan --------------------------------------------------------------------------------

  function leftovers(plan, into) {
    const parts = [];
    if (plan.kept_rows.length) parts.push(section(w("left_in_place"), plan.kept_rows.map(rowItem)));
    if (plan.user_commands.length) parts.push(section(w("run_yourself"), plan.user_commands.map((c) => cmdLine(c.command, c.why))));
    for (const n of plan.notes) parts.push(el("p", { class: "muted small", text: n }));
    into.replaceChildren(...parts);
  }

  // The core's tally of the plan with the ticks shown (asked of the shell on every change).
  function showTicks(t) {
    wz.ticks = t;
    $("#wz-plan-total").textContent = `${t.tally}.`;
    $("#wz-plan-next").disabled = !t.will_run;
  }
  async function planTotals() {
    const seq = ++wz.ticksSeq;
    let t;
    try { t = await invoke("uninstall_ticks", { checked: wz.plan.steps.map((s) => s.checked) }); } catch (e) { toast(String(e)); return null; }
    if (seq !== wz.ticksSeq) return null;
    showTicks(t);
    return t;
  }

  function renderPlan(plan) {
    const rows = plan.steps.map((s, i) => {
      const cb = el("input", { type: "checkbox", class: "wz-step", "aria-label": s.summary, dataset: { index: String(i) } });
      cb.checked = s.checked;
      cb.addEventListener("change", () => { wz.plan.steps[i].checked = cb.checked; planTotals(); });
      return el("tr", { class: "wz-plan-row", dataset: { index: String(i), step: s.action } },
        el("td", { class: "sel" }, cb),
        el("td", {}, el("div", { text: s.summary }), s.why ? el("div", { class: "reason", text: s.why }) : null),
        el("td", { class: "size", text: plan.sizes[i] }));
    });
    if (!rows.length) rows.push(el("tr", {}, el("td", { class: "empty", text: w("nothing_to_do") })));
    $("#wz-plan-steps").replaceChildren(...rows);
    leftovers(plan, $("#wz-plan-left"));
    showTicks(plan);
  }

  async function makePlan() {
    const product = $("input[name='wz-product']:checked").value;
    const btn = $("#wz-choices-next");
    btn.disabled = true;
    try {
      wz.plan = await invoke("uninstall_plan", {
        product,
        removeCredentials: $("#wz-creds").checked,
        removePathBlock: $("#wz-pathblock").checked,
      });
      renderPlan(wz.plan);
      page("plan");
    } catch (e) {
      toast(String(e));
    } finally {
      btn.disabled = false;
    }
  }

  // ---- 4. confirmation ------------------------------------------------------------------------

  async function enterConfirm() {
    const t = await planTotals();
    if (!t || !t.will_run) return;
    $("#wz-confirm-summary").textContent = t.question;
    $("#wz-confirm-list").replaceChildren(...wz.plan.steps
      .map((s, i) => [s, i]).filter(([s]) => s.checked)
      .map(([s, i]) => el("li", { dataset: { index: String(i) } }, el("span", { text: s.summary }), wz.plan.sizes[i] ? el("span", { class: "wz-size", text: wz.plan.sizes[i] }) : null)));
    const skipped = wz.plan.steps.filter((s) => !s.checked);
    $("#wz-confirm-skipped").replaceChildren(...(skipped.length
      ? [section(w("skipped_unticked"), skipped.map((s) => item(s.summary)))] : []));
    leftovers(wz.plan, $("#wz-confirm-left"));
    page("confirm");
  }

  // ---- 5. progress ----------------------------------------------------------------------------

  listen("uninstall-progress", (e) => {
    if (!wz.running) return;
    const p = e.payload;
    const pct = p.total ? Math.round((100 * p.done) / p.total) : 0;
    $("#wz-progress-fill").style.width = `${Math.min(90, pct)}%`;
    $("#wz-progress-text").textContent = p.line;
    $("#wz-progress-list").append(el("li", { class: `wz-o-${p.result.outcome}` }, el("span", { text: p.summary }), el("span", { class: "wz-tag", text: p.word })));
  });

  async function run() {
    if (wz.running) return;
    wz.running = true;
    $("#wz-progress-list").replaceChildren();
    $("#wz-progress-fill").style.width = "4%";
    $("#wz-progress-text").textContent = w("stopping_then_removing");
    page("progress");
    try {
      // The plan shown, by its digest, with the ticks shown: the shell runs its own plan.
      const res = await invoke("uninstall_run", { digest: wz.plan.digest, checked: wz.plan.steps.map((s) => s.checked) });
      $("#wz-progress-fill").style.width = "100%";
      renderProof(res.proof, res.run, res.freed, res.steps);
    } catch (e) {
      // Refused before anything ran (the plan changed, nothing ticked, no journal).
      toast(String(e));
      $("#wz-confirm-summary").textContent = w("nothing_was_done", { error: e });
      page("confirm");
    } finally {
      wz.running = false;
    }
  }

  // ---- 6. proof -------------------------------------------------------------------------------

  function renderProof(pr, runReport, freed, steps) {
    const proof = pr.proof;
    const box = $("#wz-result");
    box.classList.toggle("partial", !pr.clean);
    box.dataset.result = proof.result;
    box.replaceChildren(
      el("h2", {}, pr.clean ? w("uninstalled_clean") : w("something_left")),
      el("div", {}, el("code", { id: "wz-result-line", text: w("proof_result", { result: proof.result }) }), " ", el("span", { class: "muted small", text: w("proof_home", { home: proof.audited_home }) })),
      freed ? el("div", { class: "small", text: freed }) : null,
      ...(runReport ? runReport.backups.map((b) => el("div", { class: "small" }, wn("backup", { path: el("code", { text: b }) }))) : []));
    $("#wz-checks").replaceChildren(section(w("checks"), proof.checks.map((c) =>
      el("li", { class: c.ok ? "wz-o-done" : "wz-o-failed", dataset: { key: c.key } },
        el("div", { class: "wz-item" }, el("span", { text: c.key }), el("span", { class: "wz-tag", text: c.ok ? c.value : w("fail") })),
        ...(c.ok ? [] : [el("div", { class: "reason", text: w("found", { value: c.value }) })]),
        ...(c.remaining || []).map((r) => el("div", { class: "reason wz-remains" }, wn("remains", { what: r.what, fix: [el("b", { text: w("fix") }), ` ${r.fix}`] })))))));
    if (pr.failed_line) $("#wz-checks").prepend(el("p", { class: "status warn", text: pr.failed_line }));
    $("#wz-outcomes").replaceChildren(...(runReport ? [section(w("steps"), runReport.records.map((r, i) =>
      el("li", { class: `wz-o-${r.result.outcome}`, dataset: { index: String(r.index) } },
        el("div", { class: "wz-item" }, el("span", { text: steps[i].line }), el("span", { class: "wz-tag", text: steps[i].word })),
        el("div", { class: "reason", text: steps[i].detail }))))] : []));
    if (wz.plan) leftovers(wz.plan, $("#wz-proof-left"));
    $("#wz-report").value = pr.report;
    $("#wz-copied").textContent = "";
    page("proof");
  }

  // ---- wiring ---------------------------------------------------------------------------------

  $("#wz-pre-again").addEventListener("click", loadPreflight);
  $("#wz-pre-next").addEventListener("click", () => { if (wz.pre) enterChoices(); });
  $("#wz-choices-back").addEventListener("click", () => page("preflight"));
  $("#wz-choices-next").addEventListener("click", makePlan);
  $("#wz-plan-back").addEventListener("click", () => page("choices"));
  $("#wz-plan-next").addEventListener("click", enterConfirm);
  $("#wz-confirm-back").addEventListener("click", () => page("plan"));
  $("#wz-go").addEventListener("click", run);
  $("#wz-restart").addEventListener("click", () => { wz.plan = null; loadPreflight(); });
  $("#wz-verify-again").addEventListener("click", async () => {
    try { renderProof(await invoke("uninstall_verify"), null); } catch (e) { toast(String(e)); }
  });
  $("#wz-copy").addEventListener("click", async () => {
    const ta = $("#wz-report");
    const ok = await copyText(ta.value, ta);
    if (!ok) { ta.focus(); ta.select(); }
    $("#wz-copied").textContent = ok ? w("copied_clipboard") : w("selected_press");
  });

  // Look when the view is first shown (from the nav, the tray's "Uninstall SmolVM…" or #uninstall),
  // and again on a later visit while nothing has been chosen yet.
  const view = $("#view-uninstall");
  const entered = () => {
    if (!view.classList.contains("active") || wz.running) return;
    if (!wz.loaded || wz.page === "preflight") loadPreflight();
  };
  // Once the window's words are in (app.js).
  wordsReady.then(() => {
    new MutationObserver(entered).observe(view, { attributes: true, attributeFilter: ["class"] });
    entered();
  });
})();
