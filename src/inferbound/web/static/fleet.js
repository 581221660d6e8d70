/* inferbound page, "a day of a fleet": POST /api/fleet {yaml}; the reply's result (the JSON `inferbound fleet
 * FILE.yaml --json` prints) as a table (the fleet, then each pool) and four small charts of the per-minute
 * series (arrivals, queue, replicas, SLO attainment). Offline: this origin only. */
"use strict";
(function () {
  const $ = id => document.getElementById(id);
  const NS = "http://www.w3.org/2000/svg";
  const COLS = [["requests", "requests", v => IBU.num(v, 6)], ["SLO attainment", "slo_attainment", v => v === null ? "n/a" : (100 * v).toFixed(1) + " %"],
                ["TTFT p99 (ms)", "ttft_ms_p99"], ["TPOT p99 (ms)", "tpot_ms_p99"], ["ITL p99 (ms)", "itl_ms_p99"], ["E2E p99 (ms)", "e2e_ms_p99"],
                ["GPU-hours", "gpu_hours"], ["cost ($)", "cost_usd"], ["energy (kWh)", "energy_kwh"]];

  function table(result) {
    const rows = [["fleet", result], ...result.pools.map(p => [`${p.name}: ${p.deployment}`, p])];
    const t = document.createElement("table");
    t.className = "ops";
    const head = t.createTHead().insertRow();
    ["", ...COLS.map(c => c[0])].forEach(h => { const th = document.createElement("th"); th.textContent = h; head.append(th); });
    const body = t.createTBody();
    for (const [name, r] of rows) {
      const tr = body.insertRow();
      tr.insertCell().textContent = name;
      for (const [, key, fmt] of COLS) tr.insertCell().textContent = (fmt || (v => IBU.num(v, 4)))(r[key]);
    }
    return t;
  }

  /* one small line chart of ``ys`` (null: a gap) over the minutes ``xs`` */
  function chart(title, xs, ys, ymax) {
    const w = 300, h = 120, l = 36, b = 18, top = 16;
    const svg = document.createElementNS(NS, "svg");
    svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
    svg.setAttribute("width", w);
    svg.setAttribute("height", h);
    const hi = ymax !== undefined ? ymax : Math.max(1, ...ys.filter(y => y !== null));
    const xmax = Math.max(1, xs[xs.length - 1] + 1);
    const X = x => l + (w - l - 4) * x / xmax, Y = y => h - b - (h - b - top) * y / hi;
    let d = "", pen = false;
    xs.forEach((x, i) => {
      if (ys[i] === null) { pen = false; return; }
      d += `${pen ? "L" : "M"}${X(x + 0.5).toFixed(1)},${Y(ys[i]).toFixed(1)}`;
      pen = true;
    });
    const add = (tag, attrs, text) => {
      const e = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
      if (text !== undefined) e.textContent = text;
      svg.append(e);
    };
    add("path", {d: `M${l},${top}V${h - b}H${w - 4}`, fill: "none", stroke: "#888"});
    add("path", {d, fill: "none", stroke: "#1f77b4", "stroke-width": 1.5});
    add("text", {x: l, y: 11, "font-size": 11}, title);
    add("text", {x: l - 3, y: top + 4, "font-size": 9, "text-anchor": "end"}, IBU.num(hi, 3));
    add("text", {x: l - 3, y: h - b, "font-size": 9, "text-anchor": "end"}, "0");
    add("text", {x: w - 4, y: h - 4, "font-size": 9, "text-anchor": "end"}, `${xmax} min`);
    return svg;
  }

  function charts(s) {
    const reps = Array.isArray(s.replicas) ? s.replicas
      : s.t_min.map((_, i) => Object.values(s.replicas).reduce((a, v) => a + v[i], 0));
    return [chart("arrivals per minute", s.t_min, s.arrivals),
            chart("queued at each minute's end", s.t_min, s.queue),
            chart("replicas (all pools)", s.t_min, reps),
            chart("SLO attainment (%) of requests finishing", s.t_min, s.attainment.map(a => a === null ? null : 100 * a), 100)];
  }

  function list(el, items) {
    el.replaceChildren(...items.map(t => { const li = document.createElement("li"); li.textContent = t; return li; }));
    el.hidden = items.length === 0;
  }

  async function run() {
    $("fleet-status").textContent = "simulating the day…";
    list($("fleet-errors"), []);
    $("fleet-out").replaceChildren();
    try {
      const r = await IBU.api("/api/fleet", {yaml: $("fleet-yaml").value});
      $("fleet-out").append(table(r.result), ...charts(r.result.series));
      list($("fleet-notes"), r.notes.map(n => "note: " + n));
      $("fleet-status").textContent = `router ${r.result.router}, ${r.result.replicas_provisioned} replicas provisioned`;
    } catch (err) {
      list($("fleet-errors"), IBU.messages(err));
      list($("fleet-notes"), []);
      $("fleet-status").textContent = "";
    }
  }

  document.addEventListener("DOMContentLoaded", () => $("fleet-run").addEventListener("click", run));
})();
