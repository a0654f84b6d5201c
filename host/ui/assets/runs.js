// The runs page: every run of the storage directory, newest first, live.
"use strict";

(function () {
  const tbody = document.querySelector("#runs tbody");
  const phaseSel = document.getElementById("phase");
  let last = null;
  const want = new URLSearchParams(location.search).get("phase") || "";

  function render() {
    if (!last) return;
    if (phaseSel.options.length === 1) {
      for (const p of last.phases) phaseSel.append(ob.el("option", {value: p}, p));
      phaseSel.value = want;
    }
    const phase = phaseSel.value;
    const runs = last.runs.filter((r) => !phase || r.phase === phase);
    ob.fill(tbody, runs.map((r) => {
      const phaseText = r.code && r.phase !== "completed" ? r.code : "";
      // A copy of a run directory holds the copied run's record: it is
      // listed, and opened, under its own directory's name.
      const copy = r.name !== r.run_id ? " (a copy of run " + r.run_id + ")" : "";
      return ob.el("tr", {class: "clickable", dataset: {run: r.name, phase: r.phase}, onclick: () => { location.href = "/runs/" + encodeURIComponent(r.name); }},
        ob.el("td", {}, ob.el("a", {href: "/runs/" + encodeURIComponent(r.name)}, r.name), copy),
        ob.el("td", {}, r.graph),
        ob.el("td", {}, ob.badge(r.phase), phaseText ? " " + phaseText : ""),
        ob.el("td", {}, ob.time(r.started_at)),
        ob.el("td", {class: "num"}, ob.duration(r.elapsed_ms)),
        ob.el("td", {class: "num"}, r.nodes.done + "/" + r.nodes.total),
        ob.el("td", {}, ob.usage(r.usage)));
    }));
    document.getElementById("empty").hidden = last.runs.length > 0;
    document.getElementById("count").textContent = runs.length + " of " + last.runs.length + " runs";
    ob.fill(document.getElementById("broken"), last.broken.map((b) =>
      ob.el("p", {class: "msg error"}, "run " + b.run_id + " cannot be read: " + b.error)));
  }

  phaseSel.addEventListener("change", () => {
    const u = new URL(location.href);
    if (phaseSel.value) u.searchParams.set("phase", phaseSel.value); else u.searchParams.delete("phase");
    history.replaceState(null, "", u);
    render();
  });
  ob.live("/api/live/runs", {runs: (l) => { last = l; render(); }});
})();
