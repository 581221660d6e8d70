/* inferbound page, shared helpers: number formats, the JSON API, base64url, downloads.
 * Downloads are Blob URLs of this origin (blob:), clicked through a temporary <a download>: nothing leaves
 * the page and the Content-Security-Policy (same origin only) is not loosened. */
"use strict";
(function () {
  function num(x, sig) {
    if (x === null || x === undefined || !isFinite(x)) return "n/a";
    if (Math.abs(x) >= 1000) return Math.round(x).toLocaleString("en-US");
    return String(+x.toPrecision(sig || 3));
  }
  const gb = b => (b / 1e9).toFixed(2) + " GB";
  const gib = b => (b / 2 ** 30).toFixed(2) + " GiB";
  const pct = f => (100 * f).toFixed(0) + "%";

  /* POST ``body`` (or GET without one); an HTTP error throws with ``detail`` (FastAPI's field errors) */
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
  const messages = err => (err.detail || [{msg: String(err.message || err)}])
    .map(d => ((d.loc || []).filter(x => x !== "body").join(".") || "") + ((d.loc || []).length > 1 ? ": " : "") + d.msg);

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

  function download(name, text, type) {
    const url = URL.createObjectURL(new Blob([text], {type: type || "text/plain"}));
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    a.hidden = true;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 5000);
  }

  window.IBU = {num, gb, gib, pct, api, messages, b64e, b64d, download};
})();
