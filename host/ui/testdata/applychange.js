// Runs the run page's change decoder (assets/change.js) for the tests of
// host/ui: each line of stdin is {"view": …, "change": …}, or
// {"timeline": …}; each line of stdout is {"view": the view applyChange
// returns (null when it refuses the change), or the entries
// timelineEntries returns (null when it refuses the message)} or
// {"error": what it threw}.
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const vm = require("vm");

const assets = process.argv[2];
const ctx = vm.createContext({});
const src = ["common.js", "change.js"].map((f) => fs.readFileSync(path.join(assets, f), "utf8")).join("\n");
vm.runInContext(src + "\nglobalThis.ob = ob;\n", ctx);
const ob = ctx.ob;

readline.createInterface({input: process.stdin, crlfDelay: Infinity}).on("line", (line) => {
  let out;
  try {
    const {view, change, timeline} = JSON.parse(line);
    out = {view: timeline !== undefined ? ob.timelineEntries(timeline) : ob.applyChange(view, change)};
  } catch (e) {
    out = {error: String((e && e.stack) || e)};
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
