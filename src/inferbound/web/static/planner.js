/* inferbound page, the planner's panels:
 *  - the Pareto frontier of /api/search under SLOs (TTFT, TPOT, E2E) and budgets ($/h, W, GPUs), on the
 *    axes the search names (data/search.yaml output.frontier, the CLI's --plot), the current deployment
 *    starred; the ranked table, its CSV and the launch command of the top row (emit);
 *  - the comparison of /api/compare: a small table editor of deployments under the page's workload and
 *    engine features, the rows with ratios to the first, a bar chart per figure and the rows' CSV.
 * The URL holds the inputs (DEFAULTS) and the compared deployments (``cmp``, base64url JSON). */
"use strict";
(function () {
  const $ = id => document.getElementById(id);
  const {html} = window.IB;
  const {num, api, messages, b64e, b64d, download} = window.IBU;
  const CONSTRAINTS = ["slo_ttft_ms", "slo_tpot_ms", "slo_e2e_ms", "max_dollars_per_hour", "max_watts", "max_total_gpus"];
  const DEFAULTS = {search_scope: "gpu", search_max_gpus: "8", objective: "tok_s_per_gpu", emit: "",
                    ...Object.fromEntries(CONSTRAINTS.map(k => [k, ""]))};
  const EDIT = [["label", "text"], ["model", "model"], ["gpu", "gpu"], ["num_gpus", "int"], ["tp", "int"],
                ["weight_dtype", "dtype"], ["act_dtype", "dtype"]];
  const METRIC_NAMES = {ttft_ms: "TTFT ms", tpot_ms: "TPOT ms", tok_s_per_gpu: "tok/s per GPU",
                        tok_s_per_user: "tok/s per user", joules_per_token: "J per token", usd_per_mtok: "$ per M tok"};
  let ctx = null, searchSeq = 0, lastSearchKey = null, lastSearch = null, current = null;
  let cmpSeq = 0, lastCompareKey = null, lastCompare = null, cmpRows = [];
  const val = id => ctx.val(id);

  /* ---------- Pareto frontier (/api/search) ---------- */
  function searchBody(dep) {
    const b = dep.config ? {config: dep.config} : {model: dep.model};
    Object.assign(b, {gpus: val("search_scope") === "gpu" ? [dep.gpu] : null,
      max_gpus: Number(val("search_max_gpus") || 8), objective: val("objective"),
      input_len: Number(val("input_len") || 1024), output_len: Math.max(2, Number(val("output_len") || 256)),
      top: 5, max_points: 400}, ctx.features(), ctx.lengthsBody());
    for (const k of CONSTRAINTS) if (val(k) !== "") b[k] = Number(val(k));
    if (val("emit")) b.emit = val("emit");
    return b;
  }
  function drawPareto() {
    if (!lastSearch) return;
    const f = lastSearch.frontiers[0], all = val("search_scope") === "all";
    const pts = f.points.map(p => {
      const tok = p.layout.split(" ");
      return {x: p[f.x], y: p[f.y], group: all ? tok[1] : tok[tok.length - 1],
              label: `${p.layout} at concurrency ${p.concurrency}: ${num(p[f.x])} ${f.x}, ${num(p[f.y])} ${f.y}, ` +
                     `TTFT ${num(p.ttft_ms)} ms`};
    });
    const cur = current && {x: current.metrics[f.x], y: current.metrics[f.y], legend: "this deployment",
                            label: `this deployment (${current.name}): ${num(current.metrics[f.x])} ${f.x}, ` +
                                   `${num(current.metrics[f.y])} ${f.y}`};
    window.IB.pareto($("pareto"), pts, {xlabel: f.x_label, ylabel: f.y_label, current: cur});
    $("pareto").dataset.x = f.x;
    $("pareto").dataset.y = f.y;
    $("pareto-axes").textContent = `${f.y_label} against ${f.x_label}, as the CLI's search --plot`;
    const cons = lastSearch.constraints.length ? ` Constraints: ${lastSearch.constraints.join(", ")}.` : "";
    $("pareto-reason").textContent = (lastSearch.winner_reason || "") + cons;
    const box = $("pareto-table");
    box.textContent = "";
    const t = html("table", "ops", null, box);
    const hr = html("tr", "", null, html("thead", "", null, t));
    for (const h of ["#", "layout", "concurrency", "tok/s per GPU", "tok/s per user", "TTFT ms", "TPOT ms", "$ / M tok", "stops at"]) html("th", "", h, hr);
    const tb = html("tbody", "", null, t);
    for (const r of lastSearch.table) {
      const tr = html("tr", "", null, tb);
      const m = r.metrics;
      for (const c of [r.rank, r.layout, r.concurrency, num(m.tok_s_per_gpu), num(m.tok_s_per_user), num(m.ttft_ms),
                       num(m.tpot_ms), m.usd_per_mtok == null ? "n/a" : "$" + num(m.usd_per_mtok), r.limit]) html("td", "", String(c), tr);
    }
    $("pareto-csv").disabled = !lastSearch.csv;
    const lc = lastSearch.launch_command;
    $("launch").hidden = !lc;
    $("launch-dl").hidden = !(lc && lc.text);
    if (lc) $("launch").textContent = lc.text || lc.note;
  }
  function clearPareto(msg) {
    lastSearch = null;
    lastSearchKey = null;
    for (const id of ["pareto", "pareto-table", "pareto-reason"]) $(id).textContent = "";
    $("pareto-csv").disabled = true;
    $("launch").hidden = $("launch-dl").hidden = true;
    $("pareto-status").textContent = msg;
  }
  async function updatePareto(dep) {
    if (!ctx.meta.features.search) return;
    const body = searchBody(dep);
    const key = JSON.stringify(body);
    if (key === lastSearchKey) return drawPareto();
    const my = ++searchSeq;
    $("pareto-status").textContent = "searching…";
    document.body.dataset.search = "busy";
    try {
      const res = await api("/api/search", body);
      if (my !== searchSeq) return;
      lastSearch = res;
      lastSearchKey = key;
      $("pareto-status").textContent = `${res.evaluated.toLocaleString("en-US")} configurations, ` +
        `${res.feasible.toLocaleString("en-US")} meet the constraints, ${res.frontiers[0].total} on the frontier, ` +
        `${num(res.elapsed_s)} s`;
      drawPareto();
      document.body.dataset.search = "ready";
    } catch (err) {
      if (my !== searchSeq) return;
      clearPareto(messages(err).join("; "));
      document.body.dataset.search = "error";
    }
  }

  /* ---------- comparison (/api/compare) ---------- */
  function options(select, kind) {
    const src = {model: "model", gpu: "gpu", dtype: "weight_dtype"}[kind];
    for (const o of $(src).querySelectorAll("option")) {
      if (o.value === "__config__" || (kind === "dtype" && o.value === "")) continue;
      html("option", "", o.textContent, select).value = o.value;
    }
  }
  function renderEditor() {
    const tb = $("cmp-edit").querySelector("tbody");
    tb.textContent = "";
    cmpRows.forEach((r, i) => {
      const tr = html("tr", "", null, tb);
      tr.dataset.row = i;
      for (const [k, kind] of EDIT) {
        const td = html("td", "", null, tr);
        const input = html(kind === "text" || kind === "int" ? "input" : "select", "", null, td);
        if (kind === "int") { input.type = "number"; input.min = "1"; input.placeholder = "auto"; }
        if (kind === "text") input.placeholder = "label";
        if (input.tagName === "SELECT") options(input, kind);
        input.dataset.field = k;
        input.value = r[k] == null ? "" : String(r[k]);
        if (input.tagName === "SELECT" && input.value !== String(r[k] || "")) {
          html("option", "", String(r[k]), input).value = String(r[k]);  // keep the link's value
          input.value = String(r[k]);
        }
        input.addEventListener("input", () => { readEditor(); ctx.writeURL(); ctx.schedule(); });
      }
      const rm = html("button", "cmp-remove", "remove", html("td", "", null, tr));
      rm.type = "button";
      rm.addEventListener("click", () => { cmpRows.splice(i, 1); renderEditor(); ctx.writeURL(); ctx.schedule(); });
    });
    $("cmp-edit").hidden = cmpRows.length === 0;
  }
  function readEditor() {
    document.querySelectorAll("#cmp-edit tbody tr").forEach(tr => {
      const r = cmpRows[Number(tr.dataset.row)];
      tr.querySelectorAll("[data-field]").forEach(e => { r[e.dataset.field] = e.value.trim(); });
    });
  }
  function addCurrent() {
    const r = {label: "", model: val("model") === "__config__" ? "llama-3.1-8b" : val("model"), gpu: val("gpu"),
               num_gpus: val("num_gpus"), tp: val("tp"), weight_dtype: val("weight_dtype"), act_dtype: val("act_dtype")};
    cmpRows.push(r);
    renderEditor();
    ctx.writeURL();
    ctx.schedule();
  }
  function compareBody() {
    const feats = ctx.features();
    return {workload: ctx.compareWorkload(), deployments: cmpRows.map(r => {
      const d = {model: r.model, gpu: r.gpu, weight_dtype: r.weight_dtype, act_dtype: r.act_dtype, ...feats};
      for (const k of ["num_gpus", "tp"]) if (r[k] !== "" && r[k] != null) d[k] = Number(r[k]);
      if (r.label) d.label = r.label;
      return d;
    })};
  }
  function renderCompare(res) {
    const box = $("cmp-rows");
    box.textContent = "";
    const t = html("table", "ops cmp", null, box);
    const hr = html("tr", "", null, html("thead", "", null, t));
    for (const h of ["#", "deployment", "layout", "fits", "bound", ...res.metrics.map(m => METRIC_NAMES[m] || m)]) html("th", "", h, hr);
    const tb = html("tbody", "", null, t);
    res.rows.forEach((r, i) => {
      const tr = html("tr", r.fits ? "" : "nofit", null, tb);
      for (const c of [i + 1, r.label, r.deployment, r.fits ? "yes" : "NO", r.bound]) html("td", "", String(c), tr);
      for (const m of res.metrics) {
        const v = r.metrics[m], q = r.ratio[m];
        const td = html("td", "", num(v), tr);
        td.dataset.metric = m;
        if (i > 0 && q != null) html("span", "ratio", ` ×${q.toFixed(2)}`, td);
      }
    });
    window.IB.bars($("cmp-chart"), res.metrics.filter(m => res.rows.some(r => r.metrics[m] != null)).map(m => ({
      title: METRIC_NAMES[m] || m,
      items: res.rows.map((r, i) => ({label: r.label, value: r.metrics[m], bad: !r.fits,
                                      text: num(r.metrics[m]) + (i > 0 && r.ratio[m] != null ? ` (×${r.ratio[m].toFixed(2)})` : "")})),
    })));
    $("cmp-csv").disabled = false;
  }
  async function updateCompare() {
    document.querySelectorAll("#cmp-edit .invalid").forEach(e => e.classList.remove("invalid"));
    if (!cmpRows.length) {
      lastCompare = lastCompareKey = null;
      $("cmp-rows").textContent = $("cmp-chart").textContent = "";
      $("cmp-csv").disabled = true;
      $("cmp-status").textContent = "add deployments to set them side by side";
      return;
    }
    const body = compareBody(), key = JSON.stringify(body);
    if (key === lastCompareKey) return;
    const my = ++cmpSeq;
    $("cmp-status").textContent = "comparing…";
    document.body.dataset.compare = "busy";
    try {
      const res = await api("/api/compare", body);
      if (my !== cmpSeq) return;
      lastCompare = res;
      lastCompareKey = key;
      $("cmp-status").textContent = `${res.rows.length} deployments, ${res.workload.scenario}`;
      renderCompare(res);
      document.body.dataset.compare = "ready";
    } catch (err) {
      if (my !== cmpSeq) return;
      lastCompare = lastCompareKey = null;
      $("cmp-rows").textContent = $("cmp-chart").textContent = "";
      $("cmp-csv").disabled = true;
      $("cmp-status").textContent = messages(err).join("; ");
      for (const d of err.detail || []) {  // mark the cell: ["body", "deployments", i, field]
        const [, where, i, field] = d.loc || [];
        const cell = where === "deployments" &&
          document.querySelector(`#cmp-edit tr[data-row="${i}"] [data-field="${field}"]`);
        if (cell) cell.classList.add("invalid");
      }
      document.body.dataset.compare = "error";
    }
  }

  /* ---------- wiring ---------- */
  function init(c) {
    ctx = c;
    $("pareto-panel").hidden = !ctx.meta.features.search;
    for (const [k, v] of Object.entries(DEFAULTS)) $(k).value = v;
    for (const id of Object.keys(DEFAULTS)) {
      for (const ev of ["input", "change"]) $(id).addEventListener(ev, () => { ctx.writeURL(); ctx.schedule(); });
    }
    $("pareto-csv").addEventListener("click", () => lastSearch && download("inferbound-search.csv", lastSearch.csv, "text/csv"));
    $("launch-dl").addEventListener("click", () => {
      const lc = lastSearch && lastSearch.launch_command;
      if (lc && lc.text) download(`launch-${lc.engine}.sh`, "#!/bin/sh\n" + lc.text, "text/x-shellscript");
    });
    $("cmp-add").addEventListener("click", addCurrent);
    $("cmp-csv").addEventListener("click", () => lastCompare && download("inferbound-compare.csv", lastCompare.csv, "text/csv"));
    renderEditor();
  }
  function readURL(q) {
    for (const k of Object.keys(DEFAULTS)) if (q.has(k)) $(k).value = q.get(k);
    if (q.has("cmp")) {
      try {
        const rows = JSON.parse(b64d(q.get("cmp")));
        if (Array.isArray(rows)) cmpRows = rows.filter(r => r && typeof r === "object").slice(0, 8)
          .map(r => Object.fromEntries(EDIT.map(([k]) => [k, r[k] == null ? "" : String(r[k])])));
      } catch (e) { /* not a comparison: ignore */ }
      renderEditor();
    }
  }
  function writeURL(q) {
    for (const [k, d] of Object.entries(DEFAULTS)) if ($(k).value.trim() !== d) q.set(k, $(k).value.trim());
    if (cmpRows.length) q.set("cmp", b64e(JSON.stringify(cmpRows)));
  }
  function update(dep, cur) {
    current = cur;
    updatePareto(dep);
    updateCompare();
  }

  window.IBPlanner = {DEFAULTS, init, readURL, writeURL, update};
})();
