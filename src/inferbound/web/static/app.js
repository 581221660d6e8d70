/* inferbound page: form state <-> URL query string, the deployment's panels (cards, memory, time split,
 * roofline, serving) for the chosen scenario; planner.js adds the frontier, exports and the comparison.
 * document.body.dataset.state is "busy" while requests are in flight, then "ready" or "error". */
"use strict";
(function () {
  const $ = id => document.getElementById(id);
  const {html, stacked} = window.IB;
  const {num, gb, gib, pct, api, b64e, b64d} = window.IBU;
  const planner = window.IBPlanner;
  const CONFIG = "__config__";
  const FEATURES = ["speculative", "spec_tokens", "acceptance", "prefix_hit_rate", "kv_offload", "kv_offload_gb"];
  const DEFAULTS = {
    model: "llama-3.1-8b", gpu: "h100_sxm", num_gpus: "", tp: "", pp: "1", ep: "1", dp: "1",
    weight_dtype: "bf16", act_dtype: "bf16", kv_dtype: "", scenario: "static", batch: "8", load: "rate", rate: "1",
    concurrency: "16", think_time: "0", requests: "1000", input_len: "1024", output_len: "256", input_dist: "",
    output_dist: "", dataset: "", speculative: "", spec_tokens: "", acceptance: "", prefix_hit_rate: "",
    kv_offload: "", kv_offload_gb: "",
  };  // planner.js holds the frontier's and the comparison's own
  const STEADY = ["max-throughput", "serving", "simulate"];  // scenarios with a length mix
  const SPLIT = [["compute", "compute"], ["weights", "weights"], ["kv", "KV"], ["activations", "activations"],
                 ["communication", "communication"], ["overhead", "overhead"], ["bubble", "pipeline bubble"]];
  let meta = null, seq = 0, timer = null;
  const band = b => (b === null || b === undefined) ? "" : "± " + pct(b);

  /* ---------- URL state ---------- */
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
    planner.readURL(q);
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
    planner.writeURL(q);
    const s = q.toString();
    history.replaceState(null, "", location.pathname + (s ? "?" + s : ""));
  }

  /* ---------- request bodies ---------- */
  const val = id => $(id).value.trim();
  const int = (id, d) => (val(id) === "" ? d : Number(val(id)));
  function features() {
    const b = {};
    for (const k of FEATURES) {
      if (val(k) === "") continue;
      b[k] = ["speculative", "kv_offload"].includes(k) ? val(k) : Number(val(k));
    }
    return b;
  }
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
    return Object.assign(b, features());
  }
  /* the length mix of the steady states (fixed lengths otherwise) */
  function lengthsBody() {
    const b = {};
    if (!STEADY.includes(val("scenario"))) return b;
    for (const k of ["input_dist", "output_dist", "dataset"]) if (val(k)) b[k] = val(k);
    return b;
  }
  function loadBody() {
    if (val("load") === "concurrency") return {concurrency: int("concurrency", 16), think_time: Number(val("think_time") || 0)};
    return {rate: Number(val("rate"))};
  }
  /* the workload of a comparison (compare.py keys): the simulator's scenario compares at its steady state */
  function compareWorkload() {
    const scenario = val("scenario") === "simulate" ? "serving" : val("scenario");
    const w = {scenario, input_len: int("input_len", 1024), output_len: int("output_len", 256), ...lengthsBody()};
    if (scenario === "static") w.batch = int("batch", 8);
    if (scenario === "serving") Object.assign(w, loadBody());
    return w;
  }

  /* ---------- errors and status ---------- */
  function setState(state, text) {
    document.body.dataset.state = state;
    $("status").textContent = text || "";
  }
  function showErrors(errs) {
    const box = $("errors");
    box.textContent = "";
    document.querySelectorAll("aside .invalid").forEach(e => e.classList.remove("invalid"));
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
  function renderFit(fits, reason) {
    // a deployment that does not fit leads: the reason first, every figure marked hypothetical
    const banner = $("fitbanner");
    banner.hidden = fits;
    banner.textContent = fits ? "" : `DOES NOT FIT: ${reason || "memory"}; the figures below are hypothetical`;
    $("cards").classList.toggle("hypothetical", !fits);
  }
  const dollars = x => (x == null ? "n/a" : "$" + num(x));
  const joinSub = (...xs) => xs.filter(Boolean).join(" · ");
  function renderCards(mode, est, s) {
    if (mode === "static") {
      const b = est.error_bands || {}, e = est.energy;
      card("m-ttft", num(est.ttft_ms) + " ms", joinSub(band(b.ttft), `prefill of ${est.batch}×${est.input_len} tokens`));
      card("m-tpot", num(est.tpot_ms) + " ms", joinSub(band(b.tpot), num(est.tok_s_per_user) + " tok/s per user"));
      card("m-tput", num(est.output_tok_s) + " tok/s", joinSub(band(b.throughput), num(est.output_tok_s_per_gpu) + " per GPU"));
      card("m-tokj", num(e.output_tokens_per_joule), joinSub(band(b.throughput), num(e.average_power_per_gpu_w) + " W per GPU"));
      card("m-cost", dollars(e.usd_per_million_output_tokens),
           e.usd_per_hour == null ? "no price in the catalog" : joinSub(band(b.throughput), "$" + num(e.usd_per_hour) + "/h"));
    } else if (mode === "max-throughput") {
      const b = s.error_bands || {};
      card("m-ttft", "n/a", "offline: no first-token deadline");
      card("m-tpot", num(s.step_time_s * 1e3) + " ms", joinSub(band(b.tpot), `step at decode batch ${num(s.decode_batch)}`));
      card("m-tput", num(s.output_tok_s) + " tok/s", joinSub(band(b.throughput), num(s.output_tok_s_per_gpu) + " per GPU", "limited by " + s.limited_by));
      card("m-tokj", num(s.output_tokens_per_joule), joinSub(band(b.throughput), num(s.power_per_gpu_w) + " W per GPU"));
      card("m-cost", dollars(s.usd_per_million_output_tokens), band(b.throughput));
    } else if (mode === "serving") {
      card("m-ttft", num(s.ttft_s.mean * 1e3) + " ms", `mean; p99 ${num(s.ttft_s.p99 * 1e3)} ms over the length mix`);
      card("m-tpot", num(s.tpot_s * 1e3) + " ms", num(s.tok_s_per_user) + " tok/s per user");
      card("m-tput", num(s.output_tok_s) + " tok/s", `${num(s.requests_per_s)} req/s · ${num(s.output_tok_s_per_gpu)} per GPU`);
      card("m-tokj", num(1 / s.joules_per_output_token), num(s.power_per_gpu_w) + " W per GPU");
      card("m-cost", dollars(s.usd_per_million_output_tokens), "steady state");
    } else {
      card("m-ttft", num(s.ttft_ms_p50) + " ms", `median; p99 ${num(s.ttft_ms_p99)} ms`);
      card("m-tpot", num(s.tpot_ms_mean) + " ms", `mean; p99 ${num(s.tpot_ms_p99)} ms`);
      card("m-tput", num(s.output_tok_s) + " tok/s", `${num(s.requests_per_s)} req/s · ${num(s.output_tok_s_per_gpu)} per GPU`);
      card("m-tokj", num(s.output_tokens_per_joule), num(s.average_power_per_gpu_w) + " W per GPU");
      card("m-cost", dollars(s.usd_per_million_output_tokens), "simulated");
    }
  }
  /* m: a memory report (static: est.memory; a steady state: view.memory, with kv_on_gpu / kv_in_host) */
  function renderMemory(m, note) {
    const kv = m.kv_on_gpu !== undefined ? m.kv_on_gpu : m.kv_cache;
    const parts = [["weights", "Weights", m.weights], ["kv_cache", "KV cache", kv],
                   ["activations", "Activations", m.activations], ["reserve", "Reserve", m.reserve]]
      .map(([key, label, v]) => ({key, label, value: v, text: gb(v)}));
    const onGpu = m.weights + kv + m.activations + m.reserve;
    const bar = stacked($("membar"), parts, {total: m.capacity, marker: onGpu > m.capacity ? m.capacity : 0,
                                             markerLabel: "HBM capacity " + gb(m.capacity)});
    bar.querySelectorAll(".seg").forEach((s, i) => { s.title += ` (${gib(parts.filter(p => p.value > 0)[i].value)})`; });
    const host = m.kv_host_pool > 0 ? ` · host tier ${gb(m.kv_host_pool)} of evicted prefixes (KV on GPU ${gb(kv)})` : "";
    const fit = html("div", m.fits ? "fit ok" : "fit bad", `${gb(onGpu)} of ${gb(m.capacity)} per GPU ` +
                     `(${pct(onGpu / m.capacity)}): ` + (m.fits ? "fits" : "does not fit") + host, $("membar"));
    fit.title = `${gib(onGpu)} of ${gib(m.capacity)}`;
    $("mem-note").textContent = note;
  }
  function renderSplit(phases, note) {
    const box = $("split");
    box.textContent = "";
    for (const [name, ph] of phases) {
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
    $("split-note").textContent = note;
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
    $("roof-note").textContent = `static batch: prefill of ${roof.phases.prefill.length} operator kinds and a decode ` +
      `step at context ${num(roof.decode_context)}; ${roof.deployment}, ${roof.compute_dtype}`;
  }
  function table(box, heads, rows) {
    const t = html("table", "ops", null, box);
    const hr = html("tr", "", null, html("thead", "", null, t));
    for (const h of heads) html("th", "", h, hr);
    const tb = html("tbody", "", null, t);
    for (const r of rows) {
      const tr = html("tr", "", null, tb);
      for (const c of r) html("td", "", String(c), tr);
    }
    return t;
  }
  function loadText() {
    return val("load") === "concurrency" ? `${val("concurrency")} clients, think time ${val("think_time") || 0} s`
      : `Poisson arrivals, ${val("rate")} req/s`;
  }
  function renderSim(s) {
    const box = $("sim");
    box.textContent = "";
    table(box, ["ms", "mean", "p50", "p90", "p99"], [["TTFT", "ttft"], ["ITL", "itl"], ["TPOT", "tpot"],
      ["end-to-end", "e2e"], ["queue", "queue"]].map(([label, k]) => [label, ...["mean", "p50", "p90", "p99"]
      .map(q => num(s[`${k}_ms_${q}`]))]));
    html("p", "explain", `${s.completed.toLocaleString("en-US")} of ${s.submitted.toLocaleString("en-US")} requests in ` +
      `${num(s.duration_s)} s on ${s.deployment}; mean running ${num(s.mean_running)}, max waiting ${s.max_waiting}, ` +
      `KV use mean ${pct(s.mean_kv_use)} / max ${pct(s.max_kv_use)}, ${s.preemptions} preemptions.`, box);
    $("sim-title").textContent = "Serving simulation";
    $("sim-note").textContent = loadText();
  }
  function renderServing(s) {
    const box = $("sim");
    box.textContent = "";
    const ms = d => ["mean", "p50", "p90", "p99"].map(q => num(d[q] * 1e3));
    table(box, ["ms", "mean", "p50", "p90", "p99"], [["TTFT", ...ms(s.ttft_s)], ["end-to-end", ...ms(s.e2e_s)]]);
    html("p", "explain", `${num(s.in_service)} requests in service per replica (mean), ${num(s.decode_batch)} ` +
      `decoding while busy, busy ${pct(s.busy_share)} of the time, ${num(s.requests_per_s)} req/s` +
      (s.queue_wait_s > 0 ? `, ${num(s.queue_wait_s * 1e3)} ms queue wait` : "") +
      (s.limited_by !== "none" ? `; limited by ${s.limited_by}` : "") + `. Percentiles ${s.percentiles}.` +
      ((s.notes || []).length ? " " + s.notes.join(" ") : ""), box);
    $("sim-title").textContent = "Serving steady state";
    $("sim-note").textContent = `${loadText()}; ${s.lengths}`;
  }

  /* ---------- main update ---------- */
  function toggles() {
    $("config-label").hidden = val("model") !== CONFIG;
    const scenario = val("scenario"), serving = ["serving", "simulate"].includes(scenario);
    const show = (sel, on) => document.querySelectorAll(sel).forEach(e => { e.hidden = !on; });
    show(".load-only", serving);
    show(".rate-only", serving && val("load") === "rate");
    show(".conc-only", serving && val("load") === "concurrency");
    show(".sim-only", scenario === "simulate");
    show(".steady-only", STEADY.includes(scenario));
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
    setState("busy", scenario === "simulate" ? "simulating…" : "computing…");
    const t0 = performance.now();
    const lengths = {input_len: work.input_len, output_len: work.output_len, ...lengthsBody()};
    const calls = [api("/api/estimate", {...dep, ...work, scenario: "static"}), api("/api/roofline", {...dep, ...work})];
    if (scenario === "max-throughput") calls.push(api("/api/estimate", {...dep, ...lengths, scenario}));
    const run = val("load") === "concurrency" ? {requests: int("requests", 1000)} : {};  // the closed loop's prompts
    if (scenario === "serving") calls.push(api("/api/estimate", {...dep, ...lengths, ...loadBody(), ...run, scenario}));
    if (scenario === "simulate") {
      calls.push(api("/api/simulate", {...dep, ...lengths, ...loadBody(), requests: int("requests", 1000)}));
      calls.push(api("/api/estimate", {...dep, ...lengths, ...loadBody(), ...run, scenario: "serving"}));  // its view
    }
    const res = await Promise.allSettled(calls);
    if (my !== seq) return;
    // the simulator's view comes from the analytic steady state at its load: its failure (an overload the
    // simulator queues through) is a note on the panels, not an error of the page
    const failed = res.filter((r, i) => r.status === "rejected" && !(scenario === "simulate" && i === 3))
      .map(r => r.reason);
    showErrors(failed);
    document.querySelector("main").classList.toggle("stale", res[0].status === "rejected");
    if (res[0].status === "fulfilled") {
      const est = res[0].value, ok = i => (res[i] && res[i].status === "fulfilled" ? res[i].value : null);
      const extra = ok(2), view = ((scenario === "simulate" ? ok(3) : extra) || {}).view || null;
      const s = html("span", "", `${est.model} on ${est.deployment}; weights ${est.dtypes.weight}, compute ` +
                     `${est.compute_dtype}, KV ${est.dtypes.kv_effective}; ${est.engine.label}`);
      $("summary").replaceChildren(s, ...est.warnings.map(w => html("span", "warn", " " + w)));
      const mode = extra ? scenario : "static";
      if (view) renderFit(view.memory.fits, view.memory.reason);
      else renderFit(est.fits !== false, est.fit_reason);
      renderCards(mode, est, extra);
      if (view) {
        const what = scenario === "simulate" ? "the analytic steady state at this load (the simulation's own KV use is " +
          "in its panel)" : scenario === "serving" ? "the serving steady state" : "the max-throughput point";
        renderMemory(view.memory, `${view.memory.basis}${scenario === "simulate" ? " — " + what : ""}`);
        renderSplit([["Steady-state step, per output token", view.step]], `${what}: decode batch ` +
          `${num(view.step.decode_batch)}, ${pct(view.step.prefill_step_share)} ` +
          `of the steps carry prefill chunks` + (view.step.tokens_per_step > 1 ? `, ${num(view.step.tokens_per_step)} ` +
          `tokens per sequence per step (speculative)` : ""));
      } else {
        renderMemory(est.memory, `static batch ${est.batch} × ${(est.input_len + est.output_len).toLocaleString("en-US")} ` +
          `tokens; largest batch at this context: ${est.max_batch_at_context.toLocaleString("en-US")}` +
          (scenario === "simulate" && res[3].status === "rejected" ? " (the analytic steady state at this load: " +
            window.IBU.messages(res[3].reason).join("; ") + ")" : scenario !== "static" ?
            ` (the ${scenario} figures could not be computed)` : ""));
        renderSplit([["Prefill", est.prefill], ["Decode step", est.decode]], `static batch ${est.batch}: ` +
          "compute / memory / communication split of each phase");
      }
      if (res[1].status === "fulfilled") { window.IB.roofline($("roofline"), res[1].value); renderOps(res[1].value); }
      if (scenario === "simulate" && extra) renderSim(extra);
      if (scenario === "serving" && extra) renderServing(extra);
      const pt = extra || est;
      const name = mode === "static" ? `static batch ${est.batch}` : mode === "max-throughput" ? "max-throughput point"
        : mode === "serving" ? "serving steady state" : "simulated serving";
      planner.update(dep, {metrics: {tok_s_per_gpu: pt.output_tok_s_per_gpu, tok_s_per_user: pt.tok_s_per_user},
                           name});
    }
    setState(failed.length ? "error" : "ready", `updated in ${Math.round(performance.now() - t0)} ms`);
  }
  function schedule() {
    clearTimeout(timer);
    timer = setTimeout(update, 200);
  }
  function featureDefaults() {
    // EAGLE heads and n-gram lookup need k and an acceptance (MTP takes the model's layers and the cited default)
    const m = val("speculative");
    if (m && m !== "mtp") {
      if (val("spec_tokens") === "") $("spec_tokens").value = "3";
      if (val("acceptance") === "") $("acceptance").value = "0.7";
    }
    if (!m) { $("spec_tokens").value = ""; $("acceptance").value = ""; }
    if (val("kv_offload") === "") $("kv_offload_gb").value = "";
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
    for (const d of meta.datasets || []) html("option", "", d, $("dataset")).value = d;
    for (const [k, v] of Object.entries(DEFAULTS)) setValue(k, v);
    if (!meta.features.simulate) $("scenario").querySelector('option[value="simulate"]').remove();
    planner.init({meta, models, gpus: gpus.gpus, schedule, writeURL, val, compareWorkload, features, deploymentBody,
                  lengthsBody});
    readURL();
    $("form").addEventListener("input", schedule);
    $("form").addEventListener("change", e => {
      if (["speculative", "kv_offload"].includes(e.target.id)) featureDefaults();
      schedule();
    });
    $("form").addEventListener("submit", e => { e.preventDefault(); update(); });
    await update();
  }
  init();
})();
