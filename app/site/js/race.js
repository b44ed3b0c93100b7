/* The browser race's entry (bundled by app/site/build.py `race_script` into the site's race.js, one classic script
 * after onnxruntime-web's): loads both twins' graphs and twins.json (the folder's files, or the single file's inlined
 * ones, app/site/single.js: window.CONVERGE_SOURCE) and hands the page two objects, its only names on the window:
 * `window.converge` (ready, analysis, settings, controls, board, perplexity(prompt, answer): the referee's, and
 * race(prompt, options), which returns a promise of {left, right}: frames, text, ids and nfe each, the settings that
 * side ran with, `stopped` when options.signal ended it, and its plan (`draft`) when options.draft started it from a
 * draft) and `window.ConvergeRows` (the player's rows from frames, app/site/js/rows.js; race(player, ...), which
 * draws a race in the page's player; board(player, options), which runs the twins' board in it; cells(row,
 * board), a board row as its table shows it; and boardHeads(table, board) and showBoard(player, parts, board,
 * openings, signal), the board's table, status and note as every page that offers the board draws them).
 * tests/node/parity.mjs races the same samplers over recorded logits.
 */
import { api, controls } from "./twins.js";
import { load, fromFolder } from "./onnx.js";
import { analyzer, wire, summary, draftEntry } from "./rows.js";
import { perplexity, runBoard, cells, note } from "./board.js";

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
  race: function (prompt, options) { return racer.then(function (race) { return race(prompt, options); }); },
  /* what the board reads (twins.json `board`, app/board/notes.py): its openings, columns, side names, note's lead */
  board: ready.then(function (loaded) { return loaded.board; }),
  /* the referee's perplexity of `answer` given `prompt` (app/site/js/board.js); its graph is fetched on first use */
  perplexity: function (prompt, answer) {
    return ready.then(function (loaded) {
      var tok = loaded.twins.ar.tok, eos = loaded.twins.ar.eos;
      return loaded.referee().then(function (judge) { return perplexity(judge, tok, eos, prompt, answer); });
    });
  }
};
/* a folder that cannot load rejects each of these; whoever reads one hears why, and none is reported as unhandled */
["ready", "analysis", "settings", "controls", "board"].forEach(function (k) { converge[k].catch(function () {}); });

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

/* The twins' board drawn in `player`: the board's first `options.openings` openings (all by default) raced one after
 * another at the twins' defaults, each drawn as a race is, each side's row (app/site/js/board.js) scored by the
 * referee; `options.onRows(rows, done)` hears the rows after each race, `options.signal` stops it keeping the rows of
 * the races that finished. Returns the promise of {rows, stopped, note}: the note (after the board's `notice`) over
 * the rows, null without a finished race. */
function board(player, options) {
  options = options || {};
  return Promise.all([converge.board, converge.analysis]).then(function (got) {
    var data = got[0], analysis = got[1], texts = data.openings.slice(0, options.openings || data.openings.length);
    var race = function (text) { return draw(player, text, {signal: options.signal}); };
    return runBoard(texts, data, race, converge.perplexity, analysis, options.signal, options.onRows)
      .then(function (done) { return Object.assign(done, {note: done.rows.length ? note(done.rows, data) : null}); });
  });
}

/* The board's table heads (its columns' names, `data`: converge.board) in `table`'s thead, once. */
function boardHeads(table, data) {
  if (table.tHead.rows.length) return;
  var head = table.tHead.insertRow();
  data.columns.forEach(function (c) {
    var th = document.createElement("th");
    th.textContent = c[1];
    head.appendChild(th);
  });
}

/* the rows in `body`, a cell each as the table shows it (cells), every one as text */
function fillRows(body, rows, data) {
  body.textContent = "";
  rows.forEach(function (row) {
    var tr = document.createElement("tr");
    cells(row, data).forEach(function (v) {
      var td = document.createElement("td");
      td.textContent = v === null ? "" : String(v);
      tr.appendChild(td);
    });
    body.appendChild(tr);
  });
}

/* The one drawing of a board in a page, the static site's (app/site/page.js) and the served page's browser board
 * (app/ui/browser_race.js): `board` run in `player` over the first `asked` openings (the page's ?openings=N; all of
 * them when it is not a positive number), `parts.status` saying which opening races, `parts.table`'s rows (text only)
 * filled as each race ends, and `parts.note` the what-to-notice line from those rows, after `data.notice`.
 * `signal` stops it. Returns the promise of the board's {rows, stopped, note}, or of null where it failed (its
 * status line says why): it never rejects, so a page's buttons come back whatever happened. */
function showBoard(player, parts, data, asked, signal) {
  var all = data.openings.length, want = Math.floor(Number(asked)), body = parts.table.tBodies[0];
  var n = want > 0 ? Math.min(want, all) : all;
  boardHeads(parts.table, data);
  body.textContent = ""; parts.note.textContent = "";
  parts.status.textContent = "Racing opening 1 of " + n + "\u2026";
  return board(player, {openings: n, signal: signal, onRows: function (rows, done) {
    fillRows(body, rows, data);
    if (done < n) parts.status.textContent = "Racing opening " + (done + 1) + " of " + n + "\u2026";
  }}).then(function (r) {
    fillRows(body, r.rows, data);
    parts.status.textContent = r.stopped ? "Stopped after " + r.rows.length / 2 + " of " + n + " openings." :
                                           "Done: " + n + " openings.";
    if (r.note) {
      var lead = document.createElement("strong");
      lead.textContent = data.notice;
      parts.note.appendChild(lead);
      parts.note.appendChild(document.createTextNode(" " + r.note));
    }
    return r;
  }, function (e) { parts.status.textContent = String(e && e.message || e); return null; });
}

globalThis.converge = converge;
globalThis.ConvergeRows = {analyzer: analyzer, wire: wire, summary: summary, race: draw, board: board, cells: cells,
                           boardHeads: boardHeads, showBoard: showBoard};
