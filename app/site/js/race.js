/* The browser race's entry (bundled by app/site/build.py `race_script` into the site's race.js, one classic script
 * after onnxruntime-web's): loads both twins' graphs and twins.json (the folder's files, or the single file's inlined
 * ones, app/site/single.js: window.CONVERGE_SOURCE) and hands the page two objects, its only names on the window:
 * `window.converge` (ready, analysis, settings, controls, and race(prompt, options), which returns a promise of
 * {left, right}: frames, text, ids and nfe each, the settings that side ran with, `stopped` when options.signal
 * ended it, and its plan (`draft`) when options.draft started it from a draft) and `window.ConvergeRows` (the player's rows from frames, app/site/js/rows.js, and race(player, ...),
 * which draws a race in the page's player). tests/node/parity.mjs races the same samplers over recorded logits.
 */
import { api, controls } from "./twins.js";
import { load, fromFolder } from "./onnx.js";
import { analyzer, wire, summary, draftEntry } from "./rows.js";

/* the folder opened from disk (a file: address): the browser lets a page there fetch none of the folder's files, so
   it says how to open it instead of trying (the single file, which fetches nothing, opens from disk) */
function fromDisk(base) {
  var folder = decodeURIComponent(new URL(base || "./", globalThis.document.baseURI).pathname).replace(/\/$/, "");
  if (/^\/[A-Za-z]:/.test(folder)) folder = folder.slice(1);  // Windows: /C:/Users/... is C:/Users/...
  return new Error("This page was opened from disk, where the browser loads none of its files: open this folder " +
                   "through a web server (python -m http.server -d " + folder + ", and open the address it prints), " +
                   "or build one file that opens from disk with python -m app site converge.html --single-file.");
}

/* the folder's files by default; the single file (app/site/single.js) hands over its inlined ones instead */
function loading(page) {
  if (page.location && page.location.protocol === "file:" && !page.CONVERGE_SOURCE) {
    return Promise.reject(fromDisk(page.CONVERGE_BASE));
  }
  if (!page.ort) return Promise.reject(new Error("onnxruntime-web did not load (ort/ort.wasm.min.js)."));
  return load(page.ort, page.CONVERGE_SOURCE || fromFolder(page.CONVERGE_BASE || ""));
}

var ready = loading(globalThis), racer = ready.then(api);
var converge = {
  ready: racer.then(function () { return true; }),
  /* what app/site/js/rows.js reads to build the player's figures: the end-of-text strings and the token units */
  analysis: ready.then(function (loaded) { return loaded.analysis; }),
  /* the diffusion twin's defaults */
  settings: ready.then(function (loaded) { return Object.assign({}, loaded.settings.diffusion); }),
  /* the settings the browser honours, each twin's, with their declarations and defaults: the page's controls */
  controls: ready.then(controls),
  race: function (prompt, options) { return racer.then(function (race) { return race(prompt, options); }); }
};
/* a folder that cannot load rejects each of these; whoever reads one hears why, and none is reported as unhandled */
["ready", "analysis", "settings", "controls"].forEach(function (k) { converge[k].catch(function () {}); });

/* One race through `converge.race` drawn live in `player` (app/view/player/) as a race on
 * the page is: `mode: live`, one row per frame as it comes, each side's summary at the end. The visitor watched it
 * race at the pace it ran, so when it finishes it stays at its end (`autoplay: false`) until Play is pressed. The
 * static site's page and the served page's browser race (app/ui/browser_race.js) both call this; `extra.start`
 * adds to the first payload and `extra.end` to the last (a caption). `options.signal` (an AbortSignal) stops both
 * sides before their next pass; `options.draft` starts both from a draft, each side's plan drawn before its frames. Returns the promise of the race's {left, right}. */
var SPECS = {left: "local-diffusion", right: "local-ar"}, races = 0;

function side(key, status, start, rows, more) {
  return Object.assign({spec: SPECS[key], status: status, message: null, start: start, rows: rows}, more || {});
}

function draw(player, text, options, extra) {
  var id = "browser-" + (++races) + "-" + Date.now(), seq = 0, made = {left: [], right: []};
  var rows = null;  // each side's analyzer, once twins.json's analysis constants are in
  player.update(Object.assign({run: id, seq: seq, mode: "live", autoplay: false, prompt: text, recording: "",
                               done: false, message: null, caption: "", warnings: [],
                               sides: {left: side("left", "running", 0, []), right: side("right", "running", 0, [])}},
                              (extra || {}).start));
  var onFrame = function (key, frame) {
    var row = rows[key].add(frame), sides = {};
    made[key].push(frame);
    sides[key] = side(key, "running", row.i, wire([row]));
    player.update({run: id, seq: ++seq, sides: sides});
  };
  var onPlans = function (plans) {  // a race from a draft (options.draft): each side's line and draft tokens
    player.update({run: id, seq: ++seq, sides: {left: {draft: draftEntry(plans.left)},
                                                right: {draft: draftEntry(plans.right)}}});
  };
  return converge.analysis.then(function (analysis) {
    rows = {left: analyzer(analysis), right: analyzer(analysis)};
    return converge.race(text, Object.assign({}, options, {onFrame: onFrame, onPlans: onPlans})).then(function (r) {
      var sides = {};
      ["left", "right"].forEach(function (key) {  // a side stopped (options.signal) keeps the frames it made
        sides[key] = side(key, r[key].stopped ? "stopped" : "done", made[key].length, [], summary(made[key], analysis));
      });
      player.update(Object.assign({run: id, seq: ++seq, done: true, sides: sides}, (extra || {}).end));
      return r;
    });
  });
}

globalThis.converge = converge;
globalThis.ConvergeRows = {analyzer: analyzer, wire: wire, summary: summary, race: draw};
