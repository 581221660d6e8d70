/* inferbound page, "paste your commands": POST /api/bench {gpu, engine, serve, load}; the reply's result (the
 * JSON `inferbound bench --json` prints) as a key/value table, its notes and warnings, and the tool's own text.
 * Offline: this origin only (the Content-Security-Policy allows nothing else). */
"use strict";
(function () {
  const $ = id => document.getElementById(id);

  /* [key path, value] of every leaf of ``obj`` (nested keys joined with '.', list items by index) */
  function leaves(obj, prefix, out) {
    for (const [k, v] of Object.entries(obj)) {
      const key = prefix ? `${prefix}.${k}` : k;
      if (v !== null && typeof v === "object") leaves(v, key, out);
      else out.push([key, v]);
    }
    return out;
  }

  function show(rows) {
    const body = $("bench-table").querySelector("tbody");
    body.replaceChildren(...rows.map(([k, v]) => {
      const tr = document.createElement("tr");
      const a = document.createElement("td"), b = document.createElement("td");
      a.textContent = k;
      b.textContent = typeof v === "number" ? IBU.num(v, 6) : (v === null ? "null" : String(v));
      tr.append(a, b);
      return tr;
    }));
    $("bench-table").hidden = rows.length === 0;
    $("bench-table").style.display = rows.length ? "" : "none";  // the table's CSS display would outrank [hidden]
  }

  function list(el, items) {
    el.replaceChildren(...items.map(t => { const li = document.createElement("li"); li.textContent = t; return li; }));
    el.hidden = items.length === 0;
    el.style.display = items.length ? "" : "none";
  }

  async function run() {
    const body = {gpu: $("bench-gpu").value.trim(), load: $("bench-load").value.trim(),
                  serve: $("bench-serve").value.trim() || null, engine: $("bench-engine").value.trim() || null};
    $("bench-status").textContent = "replaying…";
    list($("bench-errors"), []);
    try {
      const r = await IBU.api("/api/bench", body);
      show(leaves(r.result, "", []));
      list($("bench-notes"), [...r.notes.map(n => "note: " + n), ...r.warnings.map(w => "warning: " + w)]);
      $("bench-text").textContent = r.text;
      $("bench-text").hidden = false;
      $("bench-status").textContent = r.tool;
    } catch (err) {
      list($("bench-errors"), IBU.messages(err));
      show([]);
      $("bench-text").hidden = true;
      $("bench-status").textContent = "";
    }
  }

  document.addEventListener("DOMContentLoaded", () => $("bench-run").addEventListener("click", run));
})();
