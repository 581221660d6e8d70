/* inferbound charts: small SVG drawings (no library, no network).
 *   IB.stacked(el, parts, opts)   horizontal stacked bar with legend (memory, time split)
 *   IB.roofline(el, data)         log-log roofline: intensity vs achieved FLOP/s per operator
 *   IB.pareto(el, pts, opts)      frontier scatter (log-log), points coloured by GPU type
 *   IB.bars(el, panels)           small multiples of horizontal bars (one panel per figure: compare)
 */
"use strict";
(function () {
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = {
    compute: "#4e79a7", weights: "#f28e2b", kv: "#e15759", kv_cache: "#e15759", activations: "#76b7b2",
    communication: "#59a14f", overhead: "#9c9a97", bubble: "#edc948", reserve: "#c9c5c0", free: "#ffffff",
  };
  const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                   "#9c755f", "#bab0ac"];

  function el(tag, attrs, parent) {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, v);
    if (parent) parent.appendChild(n);
    return n;
  }
  function html(tag, cls, text, parent) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text !== undefined && text !== null) n.textContent = text;
    if (parent) parent.appendChild(n);
    return n;
  }
  function title(node, text) { el("title", {}, node).textContent = text; }

  /* 1234.5 -> "1.23k"; SI prefixes for axis labels */
  function si(x) {
    if (!isFinite(x) || x === 0) return "0";
    const units = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [u, s] of units) if (Math.abs(x) >= u) return +(x / u).toPrecision(3) + s;
    return String(+x.toPrecision(3));
  }

  /* parts: [{key, label, value, text}], opts: {total (scale), marker (value), markerLabel} */
  function stacked(container, parts, opts) {
    opts = opts || {};
    container.textContent = "";
    const sum = parts.reduce((a, p) => a + Math.max(p.value, 0), 0);
    const scale = Math.max(opts.total || 0, sum) || 1;
    const bar = html("div", "sbar", null, container);
    for (const p of parts) {
      if (!(p.value > 0)) continue;
      const seg = html("div", "seg", null, bar);
      seg.style.width = (100 * p.value / scale).toFixed(3) + "%";
      seg.style.background = COLORS[p.key] || "#888";
      seg.title = p.label + ": " + p.text;
      seg.dataset.key = p.key;
    }
    if (opts.marker) {
      const m = html("div", "marker", null, bar);
      m.style.left = Math.min(100, 100 * opts.marker / scale).toFixed(3) + "%";
      m.title = opts.markerLabel || "";
    }
    const legend = html("div", "legend", null, container);
    for (const p of parts) {
      if (!(p.value > 0) && !opts.showZero) continue;
      const item = html("span", "item", null, legend);
      const sw = html("i", "swatch", null, item);
      sw.style.background = COLORS[p.key] || "#888";
      html("span", "", p.label + " ", item);
      html("b", "", p.text, item);
    }
    return bar;
  }

  function logScale(lo, hi, a, b) {
    const l0 = Math.log10(lo), l1 = Math.log10(hi);
    return v => a + (Math.log10(Math.max(v, lo)) - l0) / (l1 - l0) * (b - a);
  }
  function decades(lo, hi) {
    const out = [];
    for (let e = Math.ceil(Math.log10(lo)); e <= Math.floor(Math.log10(hi)); e++) out.push(Math.pow(10, e));
    return out;
  }
  function axes(svg, box, xs, ys, xr, yr, xlabel, ylabel) {
    const g = el("g", {class: "axes"}, svg);
    for (const t of decades(xr[0], xr[1])) {
      const x = xs(t);
      el("line", {x1: x, x2: x, y1: box.top, y2: box.bottom, class: "grid"}, g);
      el("text", {x: x, y: box.bottom + 16, "text-anchor": "middle"}, g).textContent = si(t);
    }
    for (const t of decades(yr[0], yr[1])) {
      const y = ys(t);
      el("line", {x1: box.left, x2: box.right, y1: y, y2: y, class: "grid"}, g);
      el("text", {x: box.left - 6, y: y + 4, "text-anchor": "end"}, g).textContent = si(t);
    }
    el("rect", {x: box.left, y: box.top, width: box.right - box.left, height: box.bottom - box.top,
                class: "frame"}, g);
    el("text", {x: (box.left + box.right) / 2, y: box.bottom + 36, "text-anchor": "middle", class: "alabel"},
       g).textContent = xlabel;
    el("text", {x: 14, y: (box.top + box.bottom) / 2, "text-anchor": "middle", class: "alabel",
                transform: `rotate(-90 14 ${(box.top + box.bottom) / 2})`}, g).textContent = ylabel;
  }
  function frame(container, w, h) {
    container.textContent = "";
    const svg = el("svg", {viewBox: `0 0 ${w} ${h}`, class: "chart", role: "img"}, container);
    return {svg, box: {left: 64, right: w - 16, top: 14, bottom: h - 48}};
  }
  function legendRow(container, items) {
    const legend = html("div", "legend", null, container);
    for (const [label, color, shape] of items) {
      const item = html("span", "item", null, legend);
      const sw = html("i", "swatch" + (shape ? " " + shape : ""), null, item);
      sw.style.background = color;
      html("span", "", label, item);
    }
  }

  /* data: /api/roofline response */
  function roofline(container, data) {
    const {svg, box} = frame(container, 760, 380);
    const peak = data.peak_flop_s, bw = data.hbm_bytes_s, ridge = data.ridge_flop_per_byte;
    const pts = [];
    for (const [phase, rows] of Object.entries(data.phases)) {
      for (const r of rows) {
        if (r.kind === "collective" || !(r.intensity > 0) || !(r.achieved_flop_s > 0)) continue;
        pts.push({phase, r});
      }
    }
    const xsAll = pts.map(p => p.r.intensity).concat([ridge]);
    const ysAll = pts.map(p => p.r.achieved_flop_s);
    const xr = [Math.pow(10, Math.floor(Math.log10(Math.min(...xsAll) / 2))),
                Math.pow(10, Math.ceil(Math.log10(Math.max(...xsAll) * 2)))];
    const ymin = ysAll.length ? Math.min(...ysAll) : peak / 1e4;
    const yr = [Math.pow(10, Math.floor(Math.log10(Math.min(ymin, xr[0] * bw) / 2))),
                Math.pow(10, Math.ceil(Math.log10(peak * 2)))];
    const xs = logScale(xr[0], xr[1], box.left, box.right), ys = logScale(yr[0], yr[1], box.bottom, box.top);
    axes(svg, box, xs, ys, xr, yr, "arithmetic intensity (FLOP per byte of HBM traffic)", "achieved FLOP/s");
    const xa = Math.max(xr[0], yr[0] / bw);
    el("polyline", {points: `${xs(xa)},${ys(xa * bw)} ${xs(ridge)},${ys(peak)} ${xs(xr[1])},${ys(peak)}`,
                    class: "roof"}, svg);
    el("line", {x1: xs(ridge), x2: xs(ridge), y1: ys(peak), y2: box.bottom, class: "ridge"}, svg);
    const lab = el("text", {x: box.left + 8, y: box.top + 16, class: "roof-label"}, svg);  // above the roof: empty
    lab.textContent = `${si(peak)} FLOP/s (${data.compute_dtype}) · HBM ${si(bw)}B/s · ridge ${ridge.toFixed(0)} FLOP/B`;
    const color = {prefill: "#4e79a7", decode: "#e15759"};
    for (const {phase, r} of pts) {
      const c = el("circle", {cx: xs(r.intensity), cy: ys(r.achieved_flop_s), r: 5, class: "pt " + phase,
                              fill: color[phase] || "#888"}, svg);
      title(c, `${phase}: ${r.name} (${r.group || r.kind}) x${r.count}\n` +
               `intensity ${r.intensity.toFixed(1)} FLOP/B, ${si(r.achieved_flop_s)}FLOP/s, ` +
               `${(r.time_s * 1e3).toPrecision(3)} ms, ${r.bound}-bound`);
    }
    legendRow(container, [["prefill operators", color.prefill, "dot"], ["decode operators", color.decode, "dot"],
                          ["roof: " + (data.roof || "effective peak and HBM bandwidth"), "#333", "line"]]);
  }

  /* pts: [{x, y, label, group}], opts: {xlabel, ylabel, current: {x, y, label}} */
  function pareto(container, pts, opts) {
    const {svg, box} = frame(container, 760, 360);
    const cur = opts.current && opts.current.x > 0 && opts.current.y > 0 ? opts.current : null;
    const all = pts.filter(p => p.x > 0 && p.y > 0).concat(cur ? [cur] : []);
    if (!all.length) { container.textContent = "No feasible configuration."; return; }
    const xr = [Math.pow(10, Math.floor(Math.log10(Math.min(...all.map(p => p.x))))),
                Math.pow(10, Math.ceil(Math.log10(Math.max(...all.map(p => p.x)))))];
    const yr = [Math.pow(10, Math.floor(Math.log10(Math.min(...all.map(p => p.y))))),
                Math.pow(10, Math.ceil(Math.log10(Math.max(...all.map(p => p.y)))))];
    if (xr[0] === xr[1]) xr[1] *= 10;
    if (yr[0] === yr[1]) yr[1] *= 10;
    const xs = logScale(xr[0], xr[1], box.left, box.right), ys = logScale(yr[0], yr[1], box.bottom, box.top);
    axes(svg, box, xs, ys, xr, yr, opts.xlabel, opts.ylabel);
    const groups = [...new Set(pts.map(p => p.group))];
    const colorOf = g => PALETTE[groups.indexOf(g) % PALETTE.length];
    const sorted = pts.filter(p => p.x > 0 && p.y > 0).sort((a, b) => a.x - b.x);
    el("polyline", {points: sorted.map(p => `${xs(p.x)},${ys(p.y)}`).join(" "), class: "frontier"}, svg);
    for (const p of sorted) {
      const c = el("circle", {cx: xs(p.x), cy: ys(p.y), r: 3, fill: colorOf(p.group), class: "fpt"}, svg);
      title(c, p.label);
    }
    if (cur) {
      const x = xs(cur.x), y = ys(cur.y);
      const star = el("path", {d: `M${x},${y - 8} L${x + 2.5},${y - 2.5} L${x + 8},${y - 2} L${x + 4},${y + 2} ` +
                                  `L${x + 5},${y + 8} L${x},${y + 5} L${x - 5},${y + 8} L${x - 4},${y + 2} ` +
                                  `L${x - 8},${y - 2} L${x - 2.5},${y - 2.5} Z`, class: "current"}, svg);
      title(star, cur.label);
    }
    legendRow(container, groups.map(g => [g, colorOf(g), "dot"]).concat(cur ? [[cur.legend, "#111", "star"]] : []));
  }

  /* panels: [{title, items: [{label, value, text, bad}]}]; one small SVG per panel, bars on a linear scale
   * from 0 to the panel's largest value (items without a value are drawn as "n/a") */
  function bars(container, panels) {
    container.textContent = "";
    const grid = html("div", "bars", null, container);
    for (const p of panels) {
      const w = 310, row = 22, top = 22, left = 112, h = top + row * p.items.length + 6;
      const box = html("div", "bar-panel", null, grid);
      const svg = el("svg", {viewBox: `0 0 ${w} ${h}`, class: "chart bars-chart", role: "img"}, box);
      el("text", {x: 4, y: 14, class: "alabel"}, svg).textContent = p.title;
      const max = Math.max(...p.items.map(i => (i.value > 0 ? i.value : 0))) || 1;
      p.items.forEach((it, k) => {
        const y = top + k * row;
        el("text", {x: left - 6, y: y + 14, "text-anchor": "end"}, svg).textContent =
          it.label.length > 17 ? it.label.slice(0, 16) + "…" : it.label;
        if (!(it.value > 0)) {
          el("text", {x: left + 4, y: y + 14}, svg).textContent = "n/a";
          return;
        }
        const bw = (w - left - 92) * it.value / max;
        const r = el("rect", {x: left, y: y + 3, width: bw.toFixed(1), height: row - 8, rx: 2,
                              fill: it.bad ? "#c44e52" : PALETTE[k % PALETTE.length], class: "bar"}, svg);
        title(r, `${it.label}: ${it.text}`);
        el("text", {x: left + bw + 4, y: y + 14, class: "bar-value"}, svg).textContent = it.text;
      });
    }
  }

  window.IB = {stacked, roofline, pareto, bars, si, html, COLORS};
})();
