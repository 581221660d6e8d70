/* inferbound page: form state <-> URL query string, JSON API calls, rendering (charts.js draws).
 * document.body.dataset.state is "busy" while requests are in flight, then "ready" or "error". */
"use strict";
(function () {
  const $ = id => document.getElementById(id);
  const {html, stacked, si} = window.IB;
  const CONFIG = "__config__";
  const DEFAULTS = {
    model: "llama-3.1-8b", gpu: "h100_sxm", num_gpus: "", tp: "", pp: "1", ep: "1", dp: "1",
    weight_dtype: "bf16", act_dtype: "bf16", kv_dtype: "", scenario: "static", batch: "8", rate: "2",
    requests: "200", input_len: "1024", output_len: "256", search_scope: "gpu", search_max_gpus: "8",
    objective: "tok_s_per_gpu",
  };
  const SPLIT = [["compute", "compute"], ["weights", "weights"], ["kv", "KV"], ["activations", "activations"],
                 ["communication", "communication"], ["overhead", "overhead"], ["bubble", "pipeline bubble"]];
  let meta = null, seq = 0, searchSeq = 0, timer = null, lastSearchKey = null, lastSearch = null, current = null;

  /* ---------- formatting ---------- */
  function num(x, sig) {
    if (x === null || x === undefined || !isFinite(x)) return "n/a";
    if (Math.abs(x) >= 1000) return Math.round(x).toLocaleString("en-US");
    return String(+x.toPrecision(sig || 3));
  }
  const gb = b => (b / 1e9).toFixed(2) + " GB";
  const gib = b => (b / 2 ** 30).toFixed(2) + " GiB";
  const pct = f => (100 * f).toFixed(0) + "%";
  const band = b => (b === null || b === undefined) ? "" : "± " + pct(b);

  /* ---------- API ---------- */
  async function api(path, body) {
    const init = body === undefined ? {} : {method: "POST", headers: {"content-type": "application/json"},
                                             body: JSON.stringify(body)};
    const r = await fetch(path, init);
    let data = null;
    try { data = await r.json(); } catch (e) { /* not JSON */ }
    if (!r.ok) {
      const err = new Error(`${path}: HTTP ${r.status}`);
      err.detail = data && Array.isArray(data.detail) ? data.detail : [{loc: [], msg: err.message}];
      throw err;
    }
    return data;
  }

  /* ---------- URL state ---------- */
  function b64e(s) {
    let bin = "";
    new TextEncoder().encode(s).forEach(c => { bin += String.fromCharCode(c); });
    return btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function b64d(s) {
    s = s.replace(/-/g, "+").replace(/_/g, "/");
    while (s.length % 4) s += "=";
    return new TextDecoder().decode(Uint8Array.from(atob(s), c => c.charCodeAt(0)));
  }
  function setValue(id, v) {
    const e = $(id);
    if (e.tagName === "SELECT" && ![...e.options].some(o => o.value === v)) {
      html("option", "", v, e).value = v;  // keep the link's value: the API will say what is wrong
    }
    e.value = v;
  }
  function readURL() {
    const q = new URLSearchParams(location.search);
    for (const k of Object.keys(DEFAULTS)) if (q.has(k)) setValue(k, q.get(k));
    if (q.has("config")) {
      try {
        $("config").value = JSON.stringify(JSON.parse(b64d(q.get("config"))), null, 1);
        setValue("model", CONFIG);
      } catch (e) { /* not a config: ignore */ }
    }
  }
  function writeURL() {
    const q = new URLSearchParams();
    for (const [k, d] of Object.entries(DEFAULTS)) {
      const v = $(k).value.trim();
      if (v !== d) q.set(k, v);
    }
    if ($("model").value === CONFIG && $("config").value.trim()) {
      try { q.set("config", b64e(JSON.stringify(JSON.parse($("config").value)))); } catch (e) { /* invalid */ }
    }
    const s = q.toString();
    history.replaceState(null, "", location.pathname + (s ? "?" + s : ""));
  }

  /* ---------- request bodies ---------- */
  const val = id => $(id).value.trim();
  const int = (id, d) => (val(id) === "" ? d : Number(val(id)));
  function deploymentBody() {
    const b = {};
    if (val("model") === CONFIG) {
      try { b.config = JSON.parse(val("config") || "{}"); } catch (e) {
        throw {detail: [{loc: ["body", "config"], msg: "config.json is not valid JSON: " + e.message}]};
      }
    } else b.model = val("model");
    b.gpu = val("gpu");
    for (const k of ["num_gpus", "tp"]) if (val(k) !== "") b[k] = int(k);
    for (const k of ["pp", "ep", "dp"]) b[k] = int(k, 1);
    b.weight_dtype = val("weight_dtype");
    b.act_dtype = val("act_dtype");
    if (val("kv_dtype")) b.kv_dtype = val("kv_dtype");
    return b;
  }

  /* ---------- errors and status ---------- */
  function setState(state, text) {
    document.body.dataset.state = state;
    $("status").textContent = text || "";
  }
  function showErrors(errs) {
    const box = $("errors");
    box.textContent = "";
    document.querySelectorAll(".invalid").forEach(e => e.classList.remove("invalid"));
    const seen = new Set();
    for (const err of errs) {
      for (const d of err.detail || [{loc: [], msg: String(err.message || err)}]) {
        const field = (d.loc || []).filter(x => x !== "body").join(".");
        const line = (field ? field + ": " : "") + d.msg;
        if (seen.has(line)) continue;
        seen.add(line);
        html("div", "error", line, box);
        const input = $((d.loc || [])[1]);
        if (input) input.classList.add("invalid");
      }
    }
    box.hidden = seen.size === 0;
  }

  /* ---------- rendering ---------- */
  function card(id, value, sub) {
    $(id).querySelector(".value").textContent = value;
    $(id).querySelector(".sub").textContent = sub || "";
  }
  function renderFit(est) {
    // a deployment that does not fit leads: the reason first, every figure marked hypothetical
    const banner = $("fitbanner");
    const fits = est.fits !== false;
    banner.hidden = fits;
    banner.textContent = fits ? "" : `DOES NOT FIT: ${est.fit_reason || "memory"}; the figures below are hypothetical`;
    $("cards").classList.toggle("hypothetical", !fits);
  }
  function renderCards(scenario, est, extra) {
    renderFit(est);
    const b = (scenario === "serving" ? {} : (scenario === "static" ? est : extra).error_bands) || {};
    const joinSub = (...xs) => xs.filter(Boolean).join(" · ");
    if (scenario === "static") {
      const e = est.energy;
      card("m-ttft", num(est.ttft_ms) + " ms", joinSub(band(b.ttft), `prefill of ${est.batch}×${est.input_len} tokens`));
      card("m-tpot", num(est.tpot_ms) + " ms", joinSub(band(b.tpot), num(est.tok_s_per_user) + " tok/s per user"));
      card("m-tput", num(est.output_tok_s) + " tok/s", joinSub(band(b.throughput), num(est.output_tok_s_per_gpu) + " per GPU"));
      card("m-tokj", num(e.output_tokens_per_joule), joinSub(band(b.throughput), num(e.average_power_per_gpu_w) + " W per GPU"));
      card("m-cost", e.usd_per_million_output_tokens == null ? "n/a" : "$" + num(e.usd_per_million_output_tokens),
           e.usd_per_hour == null ? "no price in the catalog" : joinSub(band(b.throughput), "$" + num(e.usd_per_hour) + "/h"));
    } else if (scenario === "max-throughput") {
      card("m-ttft", "n/a", "offline: no first-token deadline");
      card("m-tpot", num(extra.step_time_s * 1e3) + " ms", joinSub(band(b.tpot), `step at decode batch ${num(extra.decode_batch)}`));
      card("m-tput", num(extra.output_tok_s) + " tok/s", joinSub(band(b.throughput), num(extra.output_tok_s_per_gpu) + " per GPU", "limited by " + extra.limited_by));
      card("m-tokj", num(extra.output_tokens_per_joule), joinSub(band(b.throughput), num(extra.power_per_gpu_w) + " W per GPU"));
      card("m-cost", extra.usd_per_million_output_tokens == null ? "n/a" : "$" + num(extra.usd_per_million_output_tokens),
           band(b.throughput));
    } else {
      const s = extra;
      card("m-ttft", num(s.ttft_ms_p50) + " ms", `median; p99 ${num(s.ttft_ms_p99)} ms`);
      card("m-tpot", num(s.tpot_ms_mean) + " ms", `mean; p99 ${num(s.tpot_ms_p99)} ms`);
      card("m-tput", num(s.output_tok_s) + " tok/s", `${num(s.requests_per_s)} req/s · ${num(s.output_tok_s_per_gpu)} per GPU`);
      card("m-tokj", num(s.output_tokens_per_joule), num(s.average_power_per_gpu_w) + " W per GPU");
      card("m-cost", s.usd_per_million_output_tokens == null ? "n/a" : "$" + num(s.usd_per_million_output_tokens), "simulated");
    }
  }
  function renderMemory(est) {
    const m = est.memory;
    const parts = [["weights", "Weights", m.weights], ["kv_cache", "KV cache", m.kv_cache],
                   ["activations", "Activations", m.activations], ["reserve", "Reserve", m.reserve]]
      .map(([key, label, v]) => ({key, label, value: v, text: gb(v)}));
    const bar = stacked($("membar"), parts, {total: m.capacity, marker: m.total > m.capacity ? m.capacity : 0,
                                             markerLabel: "HBM capacity " + gb(m.capacity)});
    bar.querySelectorAll(".seg").forEach((s, i) => { s.title += ` (${gib(parts.filter(p => p.value > 0)[i].value)})`; });
    const fit = html("div", m.fits ? "fit ok" : "fit bad",
                     `${gb(m.total)} of ${gb(m.capacity)} per GPU (${pct(m.total / m.capacity)}): ` +
                     (m.fits ? "fits" : "does not fit"), $("membar"));
    fit.title = `${gib(m.total)} of ${gib(m.capacity)}`;
    $("mem-note").textContent = `batch ${est.batch} × ${(est.input_len + est.output_len).toLocaleString("en-US")} ` +
      `tokens; largest batch at this context: ${est.max_batch_at_context.toLocaleString("en-US")}`;
  }
  function renderSplit(est) {
    const box = $("split");
    box.textContent = "";
    for (const [name, ph] of [["Prefill", est.prefill], ["Decode step", est.decode]]) {
      const row = html("div", "phase", null, box);
      const head = html("div", "phase-head", null, row);
      html("b", "", name + " ", head);
      html("span", "", `${num(ph.time_s * 1e3)} ms · `, head);
      html("span", "badge " + ph.bound, ph.bound + "-bound", head);
      const parts = SPLIT.map(([key, label]) => {
        const v = ph.split_s[key] || 0;
        return {key, label, value: v, text: `${pct(v / ph.time_s)} (${num(v * 1e3)} ms)`};
      });
      stacked(html("div", "", null, row), parts, {total: ph.time_s});
      html("p", "explain", ph.explanation, row);
    }
  }
  function renderOps(roof) {
    const box = $("ops");
    box.textContent = "";
    for (const [phase, rows] of Object.entries(roof.phases)) {
      const total = rows.reduce((a, r) => a + r.time_s, 0);
      const t = html("table", "ops", null, box);
      html("caption", "", `${phase}: operators by time (top 6)`, t);
      const hr = html("tr", "", null, html("thead", "", null, t));
      for (const h of ["operator", "group", "×", "FLOP/B", "time", "share", "bound"]) html("th", "", h, hr);
      const tb = html("tbody", "", null, t);
      for (const r of [...rows].sort((a, b) => b.time_s - a.time_s).slice(0, 6)) {
        const tr = html("tr", "", null, tb);
        for (const c of [r.name, r.group || r.kind, r.count, r.kind === "collective" ? "–" : num(r.intensity),
                         num(r.time_s * 1e3) + " ms", pct(r.time_s / total), r.bound]) html("td", "", String(c), tr);
      }
    }
    $("roof-note").textContent = `prefill of ${roof.phases.prefill.length} operator kinds and a decode step at ` +
      `context ${num(roof.decode_context)}; ${roof.deployment}, ${roof.compute_dtype}`;
  }
  function renderSim(s) {
    const box = $("sim");
    box.textContent = "";
    const t = html("table", "ops", null, box);
    const hr = html("tr", "", null, html("thead", "", null, t));
    for (const h of ["ms", "mean", "p50", "p90", "p99"]) html("th", "", h, hr);
    const tb = html("tbody", "", null, t);
    for (const [label, k] of [["TTFT", "ttft"], ["ITL", "itl"], ["TPOT", "tpot"], ["end-to-end", "e2e"], ["queue", "queue"]]) {
      const tr = html("tr", "", null, tb);
      html("td", "", label, tr);
      for (const q of ["mean", "p50", "p90", "p99"]) html("td", "", num(s[`${k}_ms_${q}`]), tr);
    }
    html("p", "explain", `${s.completed.toLocaleString("en-US")} of ${s.submitted.toLocaleString("en-US")} requests in ` +
      `${num(s.duration_s)} s on ${s.deployment}; mean running ${num(s.mean_running)}, max waiting ${s.max_waiting}, ` +
      `KV use mean ${pct(s.mean_kv_use)} / max ${pct(s.max_kv_use)}, ${s.preemptions} preemptions.`, box);
    $("sim-note").textContent = `Poisson arrivals, ${val("rate")} req/s`;
  }

  /* ---------- Pareto frontier (/api/search) ---------- */
  function searchBody(dep) {
    const b = dep.config ? {config: dep.config} : {model: dep.model};
    return Object.assign(b, {gpus: val("search_scope") === "gpu" ? [dep.gpu] : null,
      max_gpus: int("search_max_gpus", 8), objective: val("objective"), input_len: int("input_len", 1024),
      output_len: Math.max(2, int("output_len", 256)), frontier_x: "tok_s_per_user", frontier_y: "tok_s_per_gpu",
      top: 5, max_points: 400});
  }
  function drawPareto() {
    if (!lastSearch) return;
    const all = val("search_scope") === "all";
    const pts = lastSearch.frontiers[0].points.map(p => {
      const tok = p.layout.split(" ");
      return {x: p.tok_s_per_user, y: p.tok_s_per_gpu, group: all ? tok[1] : tok[tok.length - 1],
              label: `${p.layout} at concurrency ${p.concurrency}: ${num(p.tok_s_per_gpu)} tok/s per GPU, ` +
                     `${num(p.tok_s_per_user)} tok/s per user, TTFT ${num(p.ttft_ms)} ms`};
    });
    window.IB.pareto($("pareto"), pts, {xlabel: "output tok/s per user", ylabel: "output tok/s per GPU", current});
    $("pareto-reason").textContent = lastSearch.winner_reason;
    const box = $("pareto-table");
    box.textContent = "";
    const t = html("table", "ops", null, box);
    const hr = html("tr", "", null, html("thead", "", null, t));
    for (const h of ["#", "layout", "concurrency", "tok/s per GPU", "tok/s per user", "TTFT ms", "$ / M tok", "stops at"]) html("th", "", h, hr);
    const tb = html("tbody", "", null, t);
    for (const r of lastSearch.table) {
      const tr = html("tr", "", null, tb);
      const m = r.metrics;
      for (const c of [r.rank, r.layout, r.concurrency, num(m.tok_s_per_gpu), num(m.tok_s_per_user), num(m.ttft_ms),
                       m.usd_per_mtok == null ? "n/a" : "$" + num(m.usd_per_mtok), r.limit]) html("td", "", String(c), tr);
    }
  }
  async function updatePareto(dep) {
    if (!meta.features.search) return;
    const body = searchBody(dep);
    const key = JSON.stringify(body);
    if (key === lastSearchKey) return drawPareto();
    const my = ++searchSeq;
    $("pareto-status").textContent = "searching…";
    try {
      const res = await api("/api/search", body);
      if (my !== searchSeq) return;
      lastSearch = res;
      lastSearchKey = key;
      $("pareto-status").textContent = `${res.evaluated.toLocaleString("en-US")} configurations, ` +
        `${res.frontiers[0].total} on the frontier, ${num(res.elapsed_s)} s`;
      drawPareto();
    } catch (err) {
      if (my !== searchSeq) return;
      lastSearch = null;
      lastSearchKey = null;
      $("pareto").textContent = "";
      $("pareto-table").textContent = "";
      $("pareto-reason").textContent = "";
      $("pareto-status").textContent = (err.detail || []).map(d => d.msg).join("; ") || String(err);
    }
  }

  /* ---------- main update ---------- */
  function toggles() {
    $("config-label").hidden = val("model") !== CONFIG;
    const serving = val("scenario") === "serving";
    document.querySelectorAll(".serving-only").forEach(e => { e.hidden = !serving; });
    $("sim-panel").hidden = !serving;
  }
  async function update() {
    writeURL();
    toggles();
    let dep;
    try { dep = deploymentBody(); } catch (e) { showErrors([e]); setState("error", ""); return; }
    const work = {batch: int("batch", 8), input_len: int("input_len", 1024), output_len: int("output_len", 256)};
    const scenario = val("scenario");
    const my = ++seq;
    setState("busy", scenario === "serving" ? "simulating…" : "computing…");
    const t0 = performance.now();
    const calls = [api("/api/estimate", {...dep, ...work, scenario: "static"}), api("/api/roofline", {...dep, ...work})];
    const lengths = {input_len: work.input_len, output_len: work.output_len};
    if (scenario === "max-throughput") calls.push(api("/api/estimate", {...dep, ...lengths, scenario: "max-throughput"}));
    if (scenario === "serving") {
      calls.push(api("/api/simulate", {...dep, ...lengths, rate: Number(val("rate")), requests: int("requests", 200)}));
    }
    const res = await Promise.allSettled(calls);
    if (my !== seq) return;
    const failed = res.filter(r => r.status === "rejected").map(r => r.reason);
    showErrors(failed);
    document.querySelector("main").classList.toggle("stale", res[0].status === "rejected");
    if (res[0].status === "fulfilled") {
      const est = res[0].value, extra = res[2] && res[2].status === "fulfilled" ? res[2].value : null;
      const s = html("span", "", `${est.model} on ${est.deployment}; weights ${est.dtypes.weight}, compute ` +
                     `${est.compute_dtype}, KV ${est.dtypes.kv_effective}`);
      $("summary").replaceChildren(s, ...est.warnings.map(w => html("span", "warn", " " + w)));
      renderCards(extra || scenario === "static" ? scenario : "static", est, extra);
      renderMemory(est);
      renderSplit(est);
      if (res[1].status === "fulfilled") { window.IB.roofline($("roofline"), res[1].value); renderOps(res[1].value); }
      if (scenario === "serving" && extra) renderSim(extra);
      const point = scenario === "max-throughput" && extra ? [extra.tok_s_per_user, extra.output_tok_s_per_gpu, "max-throughput point"]
        : [est.tok_s_per_user, est.output_tok_s_per_gpu, `static batch ${est.batch}`];
      current = {x: point[0], y: point[1], legend: "this deployment", label: `this deployment (${point[2]}): ` +
                 `${num(point[1])} tok/s per GPU, ${num(point[0])} tok/s per user`};
      updatePareto(dep);
    }
    setState(failed.length ? "error" : "ready", `updated in ${Math.round(performance.now() - t0)} ms`);
  }
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(update, 200);
  }

  async function init() {
    setState("busy", "loading catalogs…");
    let models, gpus;
    try {
      [meta, models, gpus] = await Promise.all([api("/api/meta"), api("/api/models"), api("/api/gpus")]);
    } catch (e) { setState("error", "cannot reach the API"); return; }
    const families = {};
    for (const m of models) (families[m.family] = families[m.family] || []).push(m);
    for (const fam of Object.keys(families).sort()) {
      const g = html("optgroup", "", null, $("model"));
      g.label = fam;
      for (const m of families[fam]) {
        const o = html("option", "", `${m.alias} (${(m.total_params / 1e9).toFixed(1)} B${m.experts ? ", MoE " + m.experts : ""})`, g);
        o.value = m.alias;
      }
    }
    html("option", "", "Paste a config.json…", $("model")).value = CONFIG;
    for (const g of gpus.gpus) html("option", "", `${g.name} · ${g.hbm_gb} GB`, $("gpu")).value = g.id;
    for (const id of ["weight_dtype", "act_dtype", "kv_dtype"]) {
      for (const d of meta.dtypes) if (!(id === "act_dtype" && d === "int4")) html("option", "", d, $(id)).value = d;
    }
    for (const [k, v] of Object.entries(DEFAULTS)) setValue(k, v);
    if (!meta.features.simulate) $("scenario").querySelector('option[value="serving"]').remove();
    $("pareto-panel").hidden = !meta.features.search;
    readURL();
    $("form").addEventListener("input", schedule);
    $("form").addEventListener("change", schedule);
    for (const id of ["search_scope", "search_max_gpus", "objective"]) $(id).addEventListener("change", () => { writeURL(); schedule(); });
    $("form").addEventListener("submit", e => { e.preventDefault(); update(); });
    await update();
  }
  init();
})();
