// Shared helpers of the run browser's pages. No framework, no build step:
// the pages are plain DOM, fed by server-sent events.
"use strict";

const ob = {};

// escapedRe matches the code points the page shows as \u202e-style
// escapes, as the command line does: the bidirectional controls, which
// would otherwise reorder what follows them ("invoice\u202eexe.pdf"
// shown as "invoicefdp.exe"). The server names them in the page's
// <meta name="obversa-escaped"> (internal/bidi), so there is one list.
ob.escapedRe = (() => {
  const meta = typeof document === "undefined" ? null : document.querySelector('meta[name="obversa-escaped"]');
  const ranges = (meta || {}).content || "";
  const cls = ranges.split(",").filter(Boolean).map((r) => r.split("-").map((h) => "\\u{" + h + "}").join("-")).join("");
  return cls ? new RegExp("[" + cls + "]", "gu") : null;
})();

// shown is text as the page shows it: escapedRe's code points escaped.
ob.shown = (s) => (ob.escapedRe ? s.replace(ob.escapedRe, (c) => "\\u" + c.codePointAt(0).toString(16).padStart(4, "0")) : s);

// el builds an element: el("td", {class: "num"}, "text", child…). Its
// attribute values (data-* too) are shown as its text is (ob.shown): a
// browser shows a title, and reorders any attribute value as it shows
// it, so no run text reaches the page unescaped.
ob.el = function (tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "dataset") ob.setData(e, v);
    else e.setAttribute(k, v === true ? "" : ob.shown(String(v)));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(ob.shown(String(c))));
  }
  return e;
};

// setData sets e's data-* attributes from an object's values, shown as
// text is (ob.shown).
ob.setData = function (e, values) {
  for (const [k, v] of Object.entries(values)) {
    if (v !== undefined && v !== null) e.dataset[k] = ob.shown(String(v));
  }
};

// fill replaces an element's children: nested lists are flattened and
// null, undefined and false left out.
ob.fill = function (e, ...children) {
  e.replaceChildren(...children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false)
    .map((c) => (c instanceof Node ? c : document.createTextNode(ob.shown(String(c))))));
  return e;
};

ob.meta = (name) => (document.querySelector(`meta[name="${name}"]`) || {}).content || "";

// duration formats milliseconds as 2.3s, 4m05s, 1h02m.
ob.duration = function (ms) {
  if (ms === undefined || ms === null) return "";
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return (ms / 1000).toFixed(1) + "s";
  if (s < 3600) return Math.floor(s / 60) + "m" + String(s % 60).padStart(2, "0") + "s";
  return Math.floor(s / 3600) + "h" + String(Math.floor(s / 60) % 60).padStart(2, "0") + "m";
};

// usage formats a usage total: "unknown" is never shown as zero.
ob.usage = function (u) {
  if (u === undefined || u === null) return "";
  if (u === "unknown") return "unknown";
  let s = "in " + (u.input || 0) + " · out " + (u.output || 0);
  if (u.cache_read) s += " · cache read " + u.cache_read;
  if (u.cache_creation) s += " · cache write " + u.cache_creation;
  return s;
};

ob.time = function (ts) {
  if (!ts) return "";
  const d = new Date(ts);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
};

ob.badge = (status) => ob.el("span", {class: "badge " + status, dataset: {status}}, status);

// post sends a steering request with the page's token; it resolves to the
// answer's JSON and rejects with its error message.
ob.post = async function (url, body) {
  const r = await fetch(url, {
    method: "POST",
    credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-Obversa-Page-Token": ob.meta("obversa-page-token")},
    body: JSON.stringify(body || {}),
  });
  const j = await r.json().catch(() => ({error: r.statusText}));
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
};

// live opens a server-sent event stream and calls handlers[event] with
// each event's JSON; the header's dot says whether it is connected. A
// browser reconnects a stream by itself after a network error, but gives
// up on it (CLOSED) after an answer that is not a stream (a 500, a
// proxy's 502): then the stream is opened again after a pause that
// doubles from 1 s up to 30 s, back to 1 s once one opens; handlers.failed,
// when given, is called with the stream each time it fails instead, and
// calls the returned object's retry(es) for that. Its restart closes the
// stream and opens it again; its stop closes it for good, the dot saying
// why (no retry opens it again).
ob.live = function (url, handlers) {
  const conn = document.getElementById("conn");
  const live = {es: null};
  let retryMS = 1000;
  live.stop = function (why) {
    if (live.es) live.es.close();
    live.es = null;
    retryMS = 1000;
    conn.className = "conn off"; conn.title = why;
  };
  // retry opens es again after the pause, when the browser gave up on it
  // and it is still the stream the page follows.
  live.retry = function (es) {
    if (es.readyState !== EventSource.CLOSED || live.es !== es) return;
    setTimeout(() => { if (live.es === es) live.restart(); }, retryMS);
    retryMS = Math.min(2 * retryMS, 30000);
  };
  live.restart = function () {
    if (live.es) live.es.close();
    const es = new EventSource(url);
    live.es = es;
    es.onopen = () => { retryMS = 1000; conn.className = "conn on"; conn.title = "live"; if (handlers.open) handlers.open(); };
    es.onerror = () => {
      if (live.es !== es) return;
      conn.className = "conn off"; conn.title = "reconnecting";
      if (handlers.failed) handlers.failed(es);
      else live.retry(es);
    };
    for (const [name, fn] of Object.entries(handlers)) {
      if (name === "open" || name === "failed") continue;
      es.addEventListener(name, (e) => { if (live.es === es) fn(JSON.parse(e.data)); });
    }
    // "end": the run is over and everything was sent; the server closes
    // the stream, and reconnecting would only fetch the same again.
    es.addEventListener("end", () => { es.close(); conn.className = "conn"; conn.title = "the run ended"; });
  };
  live.restart();
  return live;
};
