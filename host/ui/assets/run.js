// The run page: the graph with each node coloured by its state, the nodes,
// what the agents stream, the timeline of recorded events, and the
// commands for each action; live while the run runs. Approve, deny and
// resume go through the server, which does what the CLI does.
"use strict";

(function () {
  const runID = ob.meta("obversa-run");
  const enc = encodeURIComponent(runID);
  let view = null;
  let drawn = "";
  let drawing = false; // a drawing is under way
  let drawings = 0; // each drawing's element id is new: Mermaid removes an element of the id it draws
  const statusSlot = "\u2026"; // the last line of each node's label in the server's graph (ui.StatusSlot)
  let selected = "";
  let message = null; // {ok|error, text} after a steering request

  if (window.mermaid) {
    window.mermaid.initialize({startOnLoad: false, securityLevel: "strict", theme: "neutral", flowchart: {useMaxWidth: true}});
  }

  function cmds(list) {
    return ob.el("dl", {class: "cmds"}, (list || []).map((c) => [ob.el("dt", {}, c.action), ob.el("dd", {}, ob.el("code", {class: "cmd", dataset: {action: c.action}}, c.line))]));
  }

  function renderSummary() {
    const r = view.run;
    const res = view.result;
    const kv = [
      ["run", r.run_id + " (graph " + r.graph + ")"],
      ["phase", ob.badge(r.phase)],
      ["record", ob.el("code", {}, r.dir)],
      ["started", ob.time(r.started_at) + ", " + ob.duration(r.elapsed_ms) + " elapsed"],
      ["nodes", `${r.nodes.done}/${r.nodes.total} done (${r.nodes.passed} passed, ${r.nodes.failed} failed, ${r.nodes.blocked} blocked, ${r.nodes.skipped} skipped), ${r.nodes.running} running, ${r.nodes.paused} paused` + (r.nodes.interrupted ? `, ${r.nodes.interrupted} interrupted` : "") + (r.nodes.stopped ? `, ${r.nodes.stopped} stopped while uncertain` : "")],
      ["usage", ob.usage(r.usage)],
    ];
    if (res) kv.push(["result", res.kind + (res.code ? " " + res.code : "")]);
    // Why each node of a failed run failed, or never ran.
    const errs = (res && res.output && res.output.errors) || {};
    for (const id of (res && res.output && res.output.failed) || []) {
      if (errs[id]) kv.push([id, errs[id].code + ": " + errs[id].message]);
    }
    const actions = [];
    if (view.can_resume && !view.read_only) {
      actions.push(ob.el("button", {id: "resume", class: "primary", onclick: resume}, "Resume"));
    }
    ob.fill(document.getElementById("summary"),
      ob.el("dl", {class: "kv"}, kv.map(([k, v]) => [ob.el("dt", {}, k), ob.el("dd", {}, v)])),
      actions.length ? ob.el("p", {}, actions) : null,
      message ? ob.el("p", {class: "msg " + message.kind, id: "message"}, message.text) : null);
  }

  function renderWaiting() {
    const box = document.getElementById("waiting");
    const w = view.waiting || [];
    box.hidden = w.length === 0;
    ob.fill(box, ob.el("h2", {}, "Waiting for approval"), w.map((p) => ob.el("div", {class: "wait", dataset: {position: p.position}},
      ob.el("strong", {}, p.node), ob.el("code", {}, p.position),
      view.read_only ? null : ob.el("button", {class: "primary approve", onclick: (e) => decide(e.target, p.position, "allow")}, "Approve"),
      view.read_only ? null : ob.el("button", {class: "danger deny", onclick: (e) => decide(e.target, p.position, "deny")}, "Deny"),
      ob.el("span", {class: "muted"}, p.commands[0].line))));
  }

  // drawGraph draws the graph when its structure changed: the server's
  // graph is the structure alone (no node's state is in it), so a run's
  // graph is drawn once, and a change of states only recolours the
  // drawing (markGraph). One drawing at a time, and after one a pause
  // twice as long as it took (Mermaid takes seconds to lay out some
  // hundred nodes); then the graph is drawn again if it changed
  // meanwhile, as it is by then.
  async function drawGraph() {
    if (!window.mermaid || view.graph === drawn) { markGraph(); return; }
    if (drawing) return;
    drawing = true;
    try {
      while (view.graph !== drawn) {
        const src = view.graph;
        const start = performance.now();
        try {
          const {svg} = await window.mermaid.render("graph-svg-" + (++drawings), src);
          document.getElementById("graph").innerHTML = svg; // sanitized by Mermaid (securityLevel strict)
          drawn = src;
          findGraphNodes();
          markGraph();
        } catch (e) {
          ob.fill(document.getElementById("graph"), ob.el("p", {class: "msg error"}, "cannot draw the graph: " + e.message));
          break; // drawn again with the next change
        }
        if (view.graph !== drawn) await new Promise((r) => setTimeout(r, Math.max(250, 2 * (performance.now() - start))));
      }
    } finally {
      drawing = false;
    }
  }

  // graphNodes holds, for each node of the drawing by its Mermaid id
  // (n<i>), its element and the text of its label's last line, the
  // status slot (statusSlot, ui.StatusSlot) that markGraph fills with its status.
  let graphNodes = new Map();
  function findGraphNodes() {
    graphNodes = new Map();
    for (const g of document.querySelectorAll("#graph g.node")) {
      const id = /-(n[0-9]+)-/.exec(g.id);
      if (!id) continue;
      let slot = null;
      const walk = document.createTreeWalker(g, NodeFilter.SHOW_TEXT);
      for (let t = walk.nextNode(); t; t = walk.nextNode()) slot = t;
      if (slot && slot.nodeValue.trim() !== statusSlot) slot = null;
      graphNodes.set(id[1], {g, slot});
    }
  }

  // markGraph ties each drawn node to its node's id and status by the
  // node's id (ob.graphMarks), colours it by that status (app.css) and
  // writes the status in its label, and makes it open the node. Only
  // what changed is touched: the drawing stays as it is.
  function markGraph() {
    for (const m of ob.graphMarks(view)) {
      const e = graphNodes.get(m.mermaid);
      if (!e) continue;
      if (e.g.dataset.node !== ob.shown(m.node)) {
        ob.setData(e.g, {node: m.node});
        e.g.onclick = m.node ? () => select(m.node) : null;
      }
      if (e.g.dataset.status !== ob.shown(m.status)) {
        ob.setData(e.g, {status: m.status});
        if (e.slot) e.slot.nodeValue = ob.shown(m.status);
      }
    }
  }

  // renderNodes draws the nodes table: only the rows at indices when
  // given (the rest are as drawn), every row otherwise.
  function renderNodes(indices) {
    const tbody = document.querySelector("#nodes tbody");
    const row = (n) => ob.el("tr", {class: "clickable" + (n.id === selected ? " selected" : ""), dataset: {node: n.id, status: n.status}, onclick: () => select(n.id)},
      ob.el("td", {}, n.id, " ", ob.el("span", {class: "muted"}, n.lane || n.binding || "")),
      ob.el("td", {}, ob.badge(n.status), n.review && n.status === "passed" ? [" ", ob.el("span", {class: "muted review"}, n.review.accepted ? "accepted" : "rejected")] : null),
      ob.el("td", {class: "num"}, n.attempts),
      ob.el("td", {class: "num"}, ob.duration(n.elapsed_ms)),
      ob.el("td", {}, ob.usage(n.usage)));
    if (indices && tbody.children.length === view.nodes.length) {
      for (const i of indices) tbody.children[i].replaceWith(row(view.nodes[i]));
      return;
    }
    ob.fill(tbody, view.nodes.map(row));
  }

  async function select(id) {
    selected = id;
    renderNodes();
    const box = document.getElementById("node-detail");
    const r = await fetch(`/api/runs/${enc}/node?name=${encodeURIComponent(id)}`, {credentials: "same-origin"});
    if (!r.ok) { ob.fill(box, ob.el("p", {class: "msg error"}, "node " + id + ": " + r.statusText)); return; }
    const n = await r.json();
    const nv = view.nodes.find((x) => x.id === id) || {};
    const kv = [["node", n.id + " (" + n.kind + (n.lane ? ", lane " + n.lane : n.binding ? ", binding " + n.binding : "") + ")"], ["status", ob.badge(n.status)]];
    if (n.position) kv.push(["position", n.position + " (attempt " + n.attempts + ")"]);
    if (n.started_at) kv.push(["elapsed", ob.duration(n.elapsed_ms)]);
    if (n.usage) kv.push(["usage", ob.usage(n.usage)]);
    if (n.approved) kv.push(["approval", n.approved]);
    if (n.review) kv.push(["review", reviewLine(n.review)]);
    if (n.pause) kv.push(["paused", "waits for " + n.pause.kind + " at " + n.pause.position]);
    if (n.blocked) kv.push(["blocked", n.blocked.code + ": " + n.blocked.message]);
    if (n.failure) kv.push(["failure", n.failure.code + " at " + n.failure.position + ": " + n.failure.message]);
    for (const c of n.calls || []) kv.push(["call " + c.sequence, c.outcome + (c.failure_kind ? " (" + c.failure_kind + ")" : "") + (c.effective ? " by " + JSON.stringify(c.effective) : "") + ", usage " + ob.usage(c.usage)]);
    if (n.exit_code !== undefined) kv.push(["exit", n.exit_code]);
    for (const a of n.artifacts || []) kv.push(["artifact", ob.el("a", {href: `/api/runs/${enc}/artifacts/${encodeURIComponent(a.digest)}`, class: "artifact"}, a.digest), ` ${a.size} bytes, ${a.media_type}, ${a.purpose}`]);
    ob.fill(box, ob.el("div", {class: "detail", id: "detail-" + n.id, dataset: {node: n.id}},
      ob.el("dl", {class: "kv"}, kv.map(([k, ...v]) => [ob.el("dt", {}, k), ob.el("dd", {dataset: {key: k}}, v)])),
      n.text ? [ob.el("h3", {}, "text"), ob.el("pre", {class: "text"}, n.text)] : null,
      n.stdout ? [ob.el("h3", {}, "stdout (last lines)"), ob.el("pre", {}, n.stdout)] : null,
      n.stderr ? [ob.el("h3", {}, "stderr (last lines)"), ob.el("pre", {}, n.stderr)] : null,
      n.result ? [ob.el("h3", {}, "result"), ob.el("pre", {}, JSON.stringify(n.result, null, 2))] : null,
      cmds(nv.commands)));
  }

  // reviewLine says what a loop's review member's verdict did to its
  // round, as obversa show does: "fail (round rejected): summary".
  function reviewLine(r) {
    return r.verdict + (r.accepted ? " (accepted)" : " (round rejected)") + (r.summary ? ": " + r.summary : "");
  }

  function renderCommands() {
    ob.fill(document.getElementById("commands"), cmds(view.commands));
  }

  // show draws what changed in the view: its fields named in set (all
  // when set is null) and the nodes at indices (all when null).
  function show(v, set, indices) {
    const before = view && selected ? (view.nodes.find((n) => n.id === selected) || {}).status : "";
    view = v;
    if (!view.nodes) view.nodes = [];
    const now = selected ? (view.nodes.find((n) => n.id === selected) || {}).status : "";
    if (selected && before !== now) select(selected);
    const changed = (...names) => !set || names.some((k) => k in set);
    if (changed("run", "result", "can_resume", "read_only")) renderSummary();
    if (changed("waiting", "read_only")) renderWaiting();
    if (!indices || indices.length) renderNodes(indices);
    if (changed("commands")) renderCommands();
    drawGraph();
  }

  // onRun takes the whole view (a snapshot): the timeline and the output
  // that follow it replace what the page shows.
  function onRun(v) {
    fresh.timeline = fresh.output = true;
    show(v, null, null);
  }

  // onChange applies a change to the view the page holds; one that does
  // not apply to it (the page missed one, or the server restarted) makes
  // the page start again from a snapshot.
  function onChange(ch) {
    const next = ob.applyChange(view, ch);
    if (next === null) { stream.restart(); return; }
    let indices = [];
    if (ch.nodes) {
      indices = ch.nodes.len !== view.nodes.length ? null : Object.keys(ch.nodes.set || {}).map(Number);
    }
    show(next, ch.set || {}, indices);
  }

  // fresh says the next timeline and output messages replace what the
  // page shows (they follow a snapshot).
  const fresh = {timeline: true, output: true};
  let lastRev = 0;
  function onTimeline(msg) {
    let entries = ob.timelineEntries(msg);
    if (entries === null) { stream.restart(); return; }
    const tbody = document.querySelector("#timeline tbody");
    if (fresh.timeline) lastRev = 0;
    entries = entries.filter((e) => e.rev > lastRev);
    if (entries.length) lastRev = entries[entries.length - 1].rev;
    const rows = entries.map((e) => ob.el("tr", {dataset: {rev: e.rev, type: e.type}},
      ob.el("td", {class: "num"}, e.rev), ob.el("td", {}, ob.time(e.ts)), ob.el("td", {}, e.type),
      ob.el("td", {}, e.where), ob.el("td", {}, ob.el("code", {}, e.data))));
    if (fresh.timeline) tbody.replaceChildren(...rows.reverse());
    else tbody.prepend(...rows.reverse());
    fresh.timeline = false;
    while (tbody.children.length > 2000) tbody.lastChild.remove();
  }

  function onOutput(lines) {
    const pre = document.getElementById("output");
    const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    const spans = [];
    for (const l of lines) {
      const prefix = l.position ? (l.call > 1 ? l.position + " call " + l.call : l.position) : "run";
      spans.push(ob.el("span", {class: "line", dataset: {node: l.node || "", kind: l.kind}},
        ob.el("span", {class: "pos"}, prefix + " │ "), ob.el("span", {class: l.kind}, l.text), "\n"));
    }
    if (fresh.output) pre.replaceChildren(...spans);
    else pre.append(...spans);
    fresh.output = false;
    // As many lines as the server keeps for a page that opens later.
    while (pre.childNodes.length > 2000) pre.firstChild.remove();
    if (atEnd) pre.scrollTop = pre.scrollHeight;
  }

  async function decide(button, position, decision) {
    button.disabled = true;
    try {
      const a = await ob.post(`/api/runs/${enc}/approve`, {position, decision});
      const by = a.recorded_by === "worker" ? "recorded by the run's live worker" : "recorded" + (a.resumed ? "; the run is carried on" : "");
      message = {kind: "ok", text: (decision === "allow" ? "approved " : "denied ") + position + ": " + by + " (" + a.command + ")"};
    } catch (e) {
      message = {kind: "error", text: e.message};
      button.disabled = false;
    }
    renderSummary();
  }

  async function resume(e) {
    e.target.disabled = true;
    try {
      const a = await ob.post(`/api/runs/${enc}/resume`, {});
      message = {kind: "ok", text: "resuming: " + a.command};
    } catch (err) {
      message = {kind: "error", text: err.message};
    }
    renderSummary();
  }

  // onFailed: the stream failed. Once the page shows a run, a stream the
  // browser gave up on is opened again after a pause (ob.live's retry);
  // the view stays shown meanwhile, and the next stream starts with a
  // snapshot. Before any view arrived, an EventSource does not say why,
  // so the page asks /api/runs/ID, once per failure: a run whose record
  // cannot be read (its events damaged), or that does not exist, answers
  // an error, whose code, message and next step the page shows instead
  // of an empty page; and it stops listening (each new try would fold
  // the record up to its damage again) until the "Try again" button. A
  // stream that only lost the server reconnects, by itself, or, when the
  // browser gave up, after ob.live's pause.
  let failing = false;
  async function onFailed(es) {
    if (view) { stream.retry(es); return; }
    if (failing) return;
    failing = true;
    try {
      const r = await fetch(`/api/runs/${enc}`, {credentials: "same-origin"});
      if (view) { stream.retry(es); return; }
      if (r.ok) { stream.retry(es); return; }
      const j = await r.json().catch(() => ({error: r.status + " " + r.statusText}));
      const text = String(j.error || r.statusText);
      const m = /^([A-Z][A-Z0-9_]+): ([\s\S]*)$/.exec(text);
      stream.stop("not following: the run cannot be shown");
      ob.fill(document.getElementById("summary"), ob.el("div", {class: "msg error", id: "load-error", dataset: {code: m ? m[1] : ""}},
        ob.el("p", {}, "The run " + runID + " cannot be shown: " + (r.status === 404 ? "no such run" : "its record cannot be read") + "."),
        m ? ob.el("p", {}, ob.el("strong", {class: "code"}, m[1]), " ", m[2]) : ob.el("p", {}, text),
        ob.el("p", {}, ob.el("button", {id: "retry", onclick: () => stream.restart()}, "Try again"))));
    } catch (e) {
      // The server is gone: the dot says so and the stream reconnects.
      stream.retry(es);
    } finally {
      failing = false;
    }
  }

  // A stream (a reconnected one too) starts with a snapshot.
  const stream = ob.live(`/api/live/runs/${enc}`, {run: onRun, change: onChange, timeline: onTimeline, output: onOutput, failed: onFailed});
})();
