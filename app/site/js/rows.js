/* The player's rows, built in the browser from the twins' token frames (app/site/js/diffusion.js, autoregressive.js).
 *
 * The JavaScript copy of what the Python analysis does to a token frame (no text states, no schema 2 states):
 * app/analysis/changes.py SideAnalyzer (display tokens, change codes, settled prefix), app/view/payload.py wire_rows
 * (the compact rows the player merges), and changes.metrics / settled_fraction_series (a finished side's figures).
 * tests/test_site.py builds rows here from the frames of several browser races, and tests/test_site_parity.py from
 * the frames of the races it replays in Node, and both check them equal to the Python payload built from the same
 * frames, so this copy cannot drift from the one it mirrors. The end-of-text strings and the token units come from
 * twins.json (`analysis`), written from the Python constants.
 */
/* what Python's str.strip() removes (str.isspace), so a token of only these is not visible */
export var BLANK = /^[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]*$/;

/* Python's round(x, d) for x >= 0: the decimal nearest the exact value, ties (x * 2^(d+1) odd) to even */
export function pyRound(x, d) {
  var twice = x * Math.pow(2, d + 1);
  if (Number.isInteger(twice) && twice % 2 === 1) {
    var n = Math.floor(x * Math.pow(10, d));
    return (n % 2 === 0 ? n : n + 1) / Math.pow(10, d);
  }
  return Number(x.toFixed(d));
}

/* Python's round(v) to an integer: ties to even */
function pyRoundInt(v) {
  var f = Math.floor(v), r = v - f;
  return r > 0.5 || (r === 0.5 && f % 2 !== 0) ? f + 1 : f;
}

function percent(p) { return Math.max(0, Math.min(100, pyRoundInt(p * 100))); }

function prefixLen(a, b) {
  var n = Math.min(a.length, b.length), i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

function masksOf(frame) { return frame.masked == null ? null : frame.masked.map(Boolean); }

function displayTokens(frame) {
  var m = masksOf(frame);
  return m ? frame.tokens.map(function (t, i) { return m[i] ? "" : t; }) : frame.tokens.slice();
}

/* changes._token_codes: position i against position i, in the change codes `code` names (twins.json's
   `analysis.codes`, app/analysis/states.py CODE_NAMES: a code is its index) */
function tokenCodes(a, am, b, bm, code) {
  var n = a.length, m = b.length, codes = [], i;
  var UNCHANGED = code.unchanged, NEW = code["new"], CHANGED = code.changed, REMASKED = code.remasked;
  var pa = am || new Array(n).fill(false), pb = bm || new Array(m).fill(false);
  for (i = 0; i < Math.min(n, m); i++) {
    if (am === null && bm === null) codes.push(a[i] === b[i] ? UNCHANGED : CHANGED);
    else if (!pa[i] && !pb[i]) codes.push(a[i] === b[i] ? UNCHANGED : CHANGED);
    else codes.push(pa[i] && !pb[i] ? NEW : pb[i] && !pa[i] ? REMASKED : UNCHANGED);
  }
  for (i = n; i < m; i++) codes.push(bm !== null && bm[i] ? UNCHANGED : NEW);
  return codes;
}

/* revision.first_codes: the first row's codes with the draft's kept tokens quiet, as they stood before the run */
function firstCodes(codes, letters, code) {
  if (!letters) return codes;
  return codes.map(function (c, i) { return i < letters.length && letters[i] === "k" ? code.unchanged : c; });
}

/* revision.counts: what a revising side's metrics add, from its latest frame with letters (nothing without one) */
function draftCounts(frames) {
  var letters = null;
  for (var i = frames.length - 1; i >= 0 && letters === null; i--) if (frames[i].revision != null) letters = frames[i].revision;
  if (letters === null) return {};
  var n = function (c) { return letters.split(c).length - 1; };
  return {draft_kept: n("k"), draft_edited: n("e"), draft_positions: letters.length - n(".")};
}

/* changes.SideAnalyzer for token frames, with twins.json's `analysis` constants: add(frame) returns its analysed row */
export function analyzer(analysis) {
  var count = 0, prevTok = [], prevMasked = null, code = {};
  analysis.codes.forEach(function (name, i) { code[name] = i; });
  return {add: function (frame) {
    var tok = displayTokens(frame), masked = masksOf(frame);
    var codes = tokenCodes(prevTok, prevMasked, tok, masked, code), sp = 0;
    while (sp < codes.length && !codes[sp] && !(masked && masked[sp])) sp++;
    var conf = frame.confidence == null ? null : frame.confidence.map(function (c) { return pyRound(c, 3); });
    var row = {i: count, t: pyRound(frame.t, 4), step: frame.step, tok: tok,
               m: masked ? masked.map(function (x) { return x ? 1 : 0; }) : null, ch: codes, conf: conf,
               nfe: frame.nfe == null ? null : frame.nfe, final: !!frame.final, sp: Math.min(sp, prevTok.length),
               cand: frame.candidates || null};
    if (frame.revision != null) {  // a side that started from a draft: its letters; the draft's own quiet at first
      row.rv = frame.revision;
      if (!count) row.ch = firstCodes(codes, frame.revision, code);
    }
    count += 1; prevTok = tok; prevMasked = masked;
    return row;
  }};
}

/* payload.wire_rows: each row after the first sends only what follows the prefix it shares with the row before */
export function wire(rows) {
  var out = [], prev = null, prevCf = null;
  rows.forEach(function (row) {
    var keep = prev ? prefixLen(prev, row.tok) : 0, cs = [];
    row.ch.forEach(function (c, i) { if (c) cs.push(i, c); });
    var w = {i: row.i, t: row.t, step: row.step, sp: row.sp, n: row.tok.length, keep: keep,
             tok: row.tok.slice(keep), cs: cs};
    if (row.m && row.m.length) w.m = row.m;
    if (row.nfe) w.nfe = row.nfe;
    if (row.final) w.final = true;
    if (row.rv) w.rv = row.rv;
    var cf = row.conf ? row.conf.map(percent) : null;
    if (cf) {
      var kept = prevCf ? prefixLen(prevCf, cf) : 0;
      w.cfk = kept; w.cf = cf.slice(kept);
    }
    if (row.cand && row.cand.length) {  // the inspector's candidates of the positions committed or reopened here
      w.cd = row.cand.map(function (c) { return [c[0], c[1].map(function (n) { return [n[0], percent(n[1])]; })]; });
    }
    prevCf = cf; prev = row.tok;
    out.push(w);
  });
  return out;
}

export function eosCut(tok, mask, eos) {
  for (var i = 0; i < tok.length; i++) if (eos.indexOf(tok[i]) >= 0 && !(mask && mask[i])) return i;
  return tok.length;
}

function visible(tok, masked, eos) { return !masked && !BLANK.test(tok) && eos.indexOf(tok) < 0; }

function visibleCount(frame, eos) {
  var tok = displayTokens(frame), mask = masksOf(frame), n = 0;
  for (var j = 0; j < eosCut(tok, mask, eos); j++) if (visible(tok[j], !!(mask && mask[j]), eos)) n++;
  return n;
}

/* changes.settled_fraction_series for token frames: the share of the final answer's visible tokens in place */
function settledSeries(frames, eos) {
  var last = frames[frames.length - 1], ftok = displayTokens(last), fmask = masksOf(last), wanted = 0, want = {};
  for (var j = 0; j < eosCut(ftok, fmask, eos); j++) {
    if (visible(ftok[j], !!(fmask && fmask[j]), eos)) { want[j] = true; wanted++; }
  }
  return frames.map(function (f) {
    var tok = displayTokens(f), mask = masksOf(f), hits = 0;
    tok.forEach(function (x, i) {
      var same = i < ftok.length && ftok[i] === x && (mask === null && fmask === null ||
                                                      !!(mask && mask[i]) === !!(fmask && fmask[i]));
      if (same && want[i]) hits++;
    });
    return [f.t, wanted ? hits / wanted : 1.0];
  });
}

function ratio(a, b) {
  if (!b || b <= 0) return null;
  var q = a / b;
  return isFinite(q) ? q : null;
}

function content(frame, cut) {
  var tok = displayTokens(frame), mask = masksOf(frame);
  return JSON.stringify([tok.slice(0, cut), mask ? mask.slice(0, cut) : new Array(Math.min(cut, tok.length)).fill(false)]);
}

/* changes.metrics for token frames: every figure from a timestamp or a count in the frames */
function metrics(frames, analysis) {
  var eos = analysis.eos_tokens, final = frames[frames.length - 1], ftok = displayTokens(final);
  var ttft = null, i;
  for (i = 0; i < frames.length && ttft === null; i++) {
    var tok = displayTokens(frames[i]), mask = masksOf(frames[i]);
    if (tok.some(function (x, k) { return visible(x, !!(mask && mask[k]), eos); })) ttft = frames[i].t;
  }
  var tokens = visibleCount(final, eos), tFinal = final.t, settledAt = null;
  var nfes = frames.map(function (f) { return f.nfe; }).filter(function (x) { return x != null; });
  var nfe = nfes.length ? Math.max.apply(null, nfes) : null;
  if (final.final) {
    var cut = Math.min(eosCut(ftok, masksOf(final), eos) + 1, ftok.length), target = content(final, cut);
    for (i = frames.length - 1; i >= 0 && content(frames[i], cut) === target; i--) settledAt = frames[i].t;
  }
  var usage = null;
  for (i = frames.length - 1; i >= 0 && !usage; i--) if (frames[i].usage) usage = frames[i].usage;
  var used = usage ? usage.completion_tokens : null, counted = typeof used === "number" && used >= 0;
  var answer = counted ? used : tokens;
  var refreshes = frames.map(function (f) { return f.refreshes; }).filter(function (x) { return x != null; });
  return Object.assign({ttft: ttft, t_final: tFinal, frames: frames.length, tokens: tokens, tokens_per_s: ratio(answer, tFinal),
          nfe: nfe, tokens_per_nfe: ratio(answer, nfe), final_settled_at: settledAt,
          usage_tokens: used === undefined ? null : used, answer_tokens: answer,
          token_unit: analysis.token_units[counted ? "model" : "shown"],  // token frames: pieces, stopped or not
          time_per_token: answer ? ratio(tFinal, answer) : null,
          refreshes: refreshes.length ? Math.max.apply(null, refreshes) : null}, draftCounts(frames));
}

function counted(n, one) { return n.toLocaleString("en-US") + " " + (n === 1 ? one : one + "s"); }

/* side.draft_line: the panel's line for a side that started from a draft, its plan's note or what its mode did */
function draftLine(plan) {
  if (plan.note) return plan.note;
  if (plan.mode === "prefix") {
    return "Kept the draft's first " + counted(plan.kept_prefix || 0, "token") + " and wrote the rest again: an " +
           "autoregressive model cannot revise in place.";
  }
  return "Started from the draft: " + plan.renoised.length + " of its " + counted(plan.length, "token") +
         " re-noised, the rest kept as written until the model revises them.";
}

/* side.draft_entry: what the player draws of a side's plan (app/site/js/draft.js planJson); null without one */
export function draftEntry(plan) {
  if (!plan) return null;
  return {mode: plan.mode, line: draftLine(plan), tokens: plan.tokens || [], renoised: plan.renoised};
}

/* side.summary: a finished side's metrics and settled series */
export function summary(frames, analysis) {
  return frames.length ? {metrics: metrics(frames, analysis), settled: settledSeries(frames, analysis.eos_tokens)}
                       : {metrics: null, settled: []};
}
