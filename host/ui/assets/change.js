// Applying a run's live changes (docs/ui.md, "Live updates"), and
// expanding its timeline entries. The server
// folds the record and sends the run page's view whole ("run", with its
// epoch and version v), then what changed in it ("change": the fields
// that changed, and the nodes and the graph's lines that changed, from
// version base to version v). This file only puts those changes in
// place: it folds no event, and it is loaded by the page and by the
// server's tests (host/ui), which check it against the server's
// snapshots.
"use strict";

// changeFields are the view's fields a change may set whole.
ob.changeFields = ["run", "result", "waiting", "live", "can_resume", "read_only", "commands", "graph_nodes"];

// patchList returns the list a {len, set} patch makes of list, or null
// when the patch is not one that applies to it.
ob.patchList = function (list, p) {
  if (p === null || typeof p !== "object" || !Number.isSafeInteger(p.len) || p.len < 0 || p.len > 1e7) return null;
  const set = p.set === undefined ? {} : p.set;
  if (set === null || typeof set !== "object" || Array.isArray(set)) return null;
  const out = list.slice(0, p.len);
  for (const [k, v] of Object.entries(set)) {
    if (!/^(0|[1-9][0-9]{0,7})$/.test(k)) return null;
    const i = Number(k);
    if (i >= p.len) return null;
    out[i] = v;
  }
  for (let i = list.length; i < p.len; i++) {
    if (!Object.prototype.hasOwnProperty.call(set, String(i))) return null;
  }
  return out;
};

// applyChange returns the view change ch makes of view (a new object; view
// is left as it was), or null when ch does not apply to it: another
// epoch, another version, or not a change. The page then starts again
// from a snapshot.
ob.applyChange = function (view, ch) {
  if (view === null || typeof view !== "object" || ch === null || typeof ch !== "object") return null;
  if (typeof ch.epoch !== "string" || ch.epoch !== view.epoch || !Number.isSafeInteger(ch.base) || ch.base !== view.v || ch.v !== ch.base + 1) return null;
  const next = Object.assign({}, view);
  if (ch.set !== undefined) {
    if (ch.set === null || typeof ch.set !== "object" || Array.isArray(ch.set)) return null;
    for (const [k, v] of Object.entries(ch.set)) {
      if (!ob.changeFields.includes(k)) return null;
      next[k] = v;
    }
  }
  if (ch.nodes !== undefined) {
    next.nodes = ob.patchList(Array.isArray(view.nodes) ? view.nodes : [], ch.nodes);
    if (next.nodes === null || next.nodes.some((n) => n === null || typeof n !== "object" || Array.isArray(n))) return null;
  }
  if (ch.graph !== undefined) {
    const lines = ob.patchList(typeof view.graph === "string" ? view.graph.split("\n") : [], ch.graph);
    if (lines === null || lines.some((l) => typeof l !== "string")) return null;
    next.graph = lines.join("\n");
  }
  next.v = ch.v;
  return next;
};

// graphMarks says what each drawn graph node is: Mermaid node n<i> is the
// node whose id is the view's graph_nodes[i], tied to its row of
// view.nodes by that id (the nodes list also holds for_each instances and
// every round's loop members, so a position in it is no graph node's).
// Each mark is {mermaid, node, status}; node and status are "" for a node
// without a row yet (a member of a loop not started).
ob.graphMarks = function (view) {
  const rows = new Map();
  for (const n of (view && Array.isArray(view.nodes)) ? view.nodes : []) {
    if (n && typeof n === "object" && typeof n.id === "string") rows.set(n.id, n);
  }
  const list = (view && Array.isArray(view.graph_nodes)) ? view.graph_nodes : [];
  return list.map((id, i) => {
    const row = typeof id === "string" && id ? rows.get(id) : undefined;
    return {mermaid: "n" + i, node: row ? id : "", status: row ? String(row.status) : ""};
  });
};

// timelineEntries expands a "timeline" message (ui.Timeline: {types,
// entries}, each entry [rev, ms, type, where, data] with rev and ms
// counted from the entry before, type an index into types and where null
// for the entry before's) into its entries, each {rev, ts, type, where,
// data} with ts in Unix milliseconds; null when msg is not one.
ob.timelineEntries = function (msg) {
  if (msg === null || typeof msg !== "object" || !Array.isArray(msg.types) || !Array.isArray(msg.entries)) return null;
  if (!msg.types.every((t) => typeof t === "string")) return null;
  const out = [];
  let rev = 0, ms = 0, where = "";
  for (const e of msg.entries) {
    if (!Array.isArray(e) || e.length !== 5) return null;
    const [dRev, dMS, t, w, data] = e;
    if (!Number.isSafeInteger(dRev) || !Number.isSafeInteger(dMS) || !Number.isSafeInteger(t) || t < 0 || t >= msg.types.length) return null;
    if ((w !== null && typeof w !== "string") || typeof data !== "string") return null;
    rev += dRev; ms += dMS;
    if (!Number.isSafeInteger(rev) || !Number.isSafeInteger(ms)) return null;
    if (w !== null) where = w;
    out.push({rev, ts: ms, type: msg.types[t], where, data});
  }
  return out;
};
