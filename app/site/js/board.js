/* The twins' board in the browser: the JavaScript copy of app/board/notes.py (the table's cells, each twin's figures,
 * the what-to-notice line), with the two parts of app/board/run.py it needs for a race of the twins (`answer_text` and
 * `Board.row`: a side's row from its frames) and the referee's perplexity as `referee` scores an answer
 * (app/measure/quality.py `nll`). `runBoard` races the openings one after another as the page's board does. What
 * notes.py reads as constants (the openings, columns and side names) comes from twins.json's `board`, written from it.
 * tests/node/board.mjs checks every function here against Python's golden vectors.
 */
import { npSum, stopped } from "./sampling.js";
import { BLANK, pyRound, eosCut, summary } from "./rows.js";

/* notes.number: a row's figure as a number, null where it has none ("" or null) */
function figureOf(value) {
  if (value === null || value === undefined || value === "") return null;
  var out = Number(value);
  return isNaN(out) ? null : out;
}

/* Python's f"{x:.2f}" */
function fixed2(x) { return pyRound(x, 2).toFixed(2); }

/* Python's statistics.median */
function median(values) {
  var s = values.slice().sort(function (a, b) { return a - b; }), n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* run.py `answer_text` for a token frame: its shown tokens up to end-of-text */
export function answerText(frame, eosTokens) {
  var masked = frame.masked || [], cut = eosCut(frame.tokens, frame.masked || null, eosTokens);
  return frame.tokens.slice(0, cut).filter(function (t, i) { return !masked[i]; }).join("");
}

/* run.py `referee` (its `score`): the perplexity of `answer` given `prompt` under the referee (`judge`: a model whose
   forward(ids) gives every row's logits, row i scoring the token after ids[i]), prompt and answer encoded apart,
   the sequence end-of-text, prompt, answer, the answer's tokens scored (quality.py `nll`, in float64 as numpy sums);
   null for an answer of no tokens */
export async function perplexity(judge, tok, eos, prompt, answer) {
  var ids = tok.encode(answer);
  if (!ids.length) return null;
  var p = tok.encode(prompt), V = judge.V, logits = await judge.forward([eos].concat(p, ids));
  var logp = new Float64Array(ids.length), z = new Float64Array(V);
  for (var i = 0; i < ids.length; i++) {
    var row = logits.subarray((p.length + i) * V, (p.length + i + 1) * V), m = -Infinity, v;
    for (v = 0; v < V; v++) if (row[v] > m) m = row[v];
    for (v = 0; v < V; v++) z[v] = Math.exp(row[v] - m);
    logp[i] = (row[ids[i]] - m) - Math.log(npSum(z, 0, V));
  }
  return Math.exp(-npSum(logp, 0, ids.length) / ids.length);
}

function blank(value) { return value === null || value === undefined || isNaN(value) ? "" : value; }

/* run.py `Board.row` for one side of a race of the twins: its figures from its frames (changes.metrics, rows.js),
   its answer and its quality (the referee's perplexity, by `score(prompt, answer)`, to 3 places; blank for a blank
   answer) */
export async function sideRow(index, label, prompt, frames, analysis, score) {
  var m = summary(frames, analysis).metrics || {};
  var answer = frames.length ? answerText(frames[frames.length - 1], analysis.eos_tokens) : "";
  var quality = BLANK.test(answer) ? null : await score(prompt, answer);
  return {prompt_index: index, label: label, passes: blank(m.nfe), answer_tokens: blank(m.answer_tokens),
          tokens_per_pass: blank(m.tokens_per_nfe), seconds: blank(m.t_final),
          quality: quality === null ? "" : pyRound(quality, 3), answer: answer};
}

/* notes.cells: a row as the table shows it, in the columns' order */
export function cells(row, board) {
  var names = new Map(board.sides);
  var figure = function (key, places) {
    var v = figureOf(row[key]);
    return v === null || places === undefined ? v : pyRound(v, places);
  };
  return [Number(row.prompt_index) + 1, names.has(row.label) ? names.get(row.label) : row.label, figure("passes"),
          figure("answer_tokens"), figure("tokens_per_pass", 2), figure("seconds", 2), figure("quality")];
}

/* notes.openings: openings named for a sentence, counted from 1 */
export function openings(numbers) {
  var named = numbers.map(function (n) { return String(n + 1); });
  if (!named.length) return "none";
  return named.length === 1 ? named[0] : named.slice(0, -1).join(", ") + " and " + named[named.length - 1];
}

/* notes.figures: a side's tokens a pass (of the rows that count both), median and worst perplexity */
export function figures(rows, label) {
  var tokens = 0, passes = 0, quality = [];
  rows.forEach(function (r) {
    if (r.label !== label) return;
    var t = figureOf(r.answer_tokens), p = figureOf(r.passes), q = figureOf(r.quality);
    if (t !== null && p !== null) { tokens += t; passes += p; }
    if (q !== null) quality.push(q);
  });
  return [tokens / passes, median(quality), Math.max.apply(null, quality)];
}

/* notes.compared: the openings where both twins have a perplexity, the diffusion twin's above the AR twin's, and the
   others */
export function compared(rows, board) {
  var by = new Map(), d = board.sides[0][0], a = board.sides[1][0];
  rows.forEach(function (r) {
    var q = figureOf(r.quality), i = Number(r.prompt_index);
    if (q === null) return;
    if (!by.has(i)) by.set(i, {});
    by.get(i)[r.label] = q;
  });
  var both = Array.from(by.keys()).filter(function (i) { return d in by.get(i) && a in by.get(i); })
    .sort(function (x, y) { return x - y; });
  var worse = both.filter(function (i) { return by.get(i)[d] > by.get(i)[a]; });
  return [worse, both.filter(function (i) { return worse.indexOf(i) < 0; })];
}

/* notes.note: what to notice (after board.notice), from the rows */
export function note(rows, board) {
  var df = figures(rows, board.sides[0][0]), af = figures(rows, board.sides[1][0]), split = compared(rows, board);
  var worse = split[0], fine = split[1], n = worse.length + fine.length;
  return "over " + n + " openings the diffusion twin wrote " + fixed2(df[0]) + " tokens a pass (median perplexity " +
    fixed2(df[1]) + ", worst " + fixed2(df[2]) + ") and the AR twin " + fixed2(af[0]) + " (median " + fixed2(af[1]) +
    ", worst " + fixed2(af[2]) + "). More tokens a pass cost quality on " + worse.length + " of " + n +
    " openings (the diffusion twin's perplexity above the AR twin's: " + openings(worse) + ") and did not on " +
    fine.length + " (" + openings(fine) + "): one race would have told either story.";
}

/* The board: each of `texts` raced in turn by `race(text)` (which draws it and returns the race's {left, right}),
   each side's row made once its race ends (left: the board's first side, right: its second), `onRows(rows, done)`
   told after each race. Stopping (`signal`) ends it before the next race; a race it stopped leaves no rows, so the
   board keeps what finished, as a stopped board does. Returns {rows, stopped}. */
export async function runBoard(texts, board, race, score, analysis, signal, onRows) {
  var rows = [];
  for (var i = 0; i < texts.length; i++) {
    if (stopped(signal)) return {rows: rows, stopped: true};
    var r = await race(texts[i]);
    if (r.left.stopped || r.right.stopped) return {rows: rows, stopped: true};
    rows.push(await sideRow(i, board.sides[0][0], texts[i], r.left.frames, analysis, score));
    rows.push(await sideRow(i, board.sides[1][0], texts[i], r.right.frames, analysis, score));
    if (onRows) onRows(rows.slice(), i + 1);
  }
  return {rows: rows, stopped: false};
}
