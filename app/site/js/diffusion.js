/* The masked-diffusion twin in the browser (app/engine/diffusion.py: begin, start_from, next_block, forward, commit; the
 * frames of app/sources/local.py `_diffusion_fields`), with every setting but pins, from nothing or from a draft's
 * plan (app/site/js/draft.js), over `twin.model`: refresh(view, start) and
 * logits(view, cache, start, stop), each a promise of {cache, logits} (one row a position from `start` on), the ONNX
 * graph in the browser (app/site/js/onnx.js), recorded logits in tests/node/parity.mjs.
 */
import { defaultRng } from "./rng.js";
import { EOS_MARK } from "./tokenizer.js";
import { argmax, npSum, softmax, ranked, now, tell, stopped, round4, topCandidates,
         namedCandidates } from "./sampling.js";
import { noRepeat, writtenOf, blockPositions, apart } from "./stutter.js";
import { ngramBan, ngramFresh } from "./repeats.js";
import { features, filterScore } from "./commit_filter.js";
import { letters } from "./draft.js";

export function DiffRun(prompt, s, mask) {
  this.s = s; this.P = prompt.length; this.L = s.gen_length;
  this.x = prompt.concat(new Array(s.gen_length).fill(mask));
  this.masked = new Array(s.gen_length).fill(true);
  this.conf = new Float64Array(s.gen_length);
  this.guess = new Array(s.gen_length).fill(-1);
  this.held = new Array(s.gen_length).fill(0);
  this.block = 0; this.passes = 0; this.cache = null; this.nfe = 0; this.step = 0; this.refreshes = 0;
  this.done = false;
  this.rng = defaultRng(s.seed);  // numpy's default_rng(seed), drawn in Python's order
  this.plan = null; this.drafted = null;  // a draft's plan, and which of its tokens stand as the draft wrote them
}

/* `start_from`: the draft's tokens committed but for the re-noised positions, masked; the passes that chose them
   counted */
DiffRun.prototype.startFrom = function (plan, mask) {
  var gone = new Set(plan.renoised);
  this.plan = plan; this.drafted = new Array(this.L).fill(false); this.nfe = plan.nfe;
  for (var i = 0; i < plan.tokens.length; i++) {
    var kept = !gone.has(i);
    this.x[this.P + i] = kept ? plan.tokens[i] : mask;
    this.masked[i] = !kept; this.conf[i] = kept ? 1.0 : 0.0; this.drafted[i] = kept;
  }
};

DiffRun.prototype.budget = function () {
  var n = this.s.gen_length / this.s.block_length;
  return Math.floor(this.s.steps / n) + (this.block < this.s.steps % n ? 1 : 0);
};

DiffRun.prototype.nextBlock = function () {
  var B = this.s.block_length, n = this.L / B;
  while (this.block < n) {
    if (this.masked.slice(this.block * B, (this.block + 1) * B).some(Boolean)) return true;
    this.block += 1; this.passes = 0; this.cache = null;
  }
  return false;
};

/* what the model sees this block: the answer up to `lookahead` tokens right of the block (0: all of it) */
DiffRun.prototype.end = function () {
  var hi = (this.block + 1) * this.s.block_length;
  return this.P + (this.s.lookahead ? Math.min(this.L, hi + this.s.lookahead) : this.L);
};

/* one pass as `_network` makes it for a twin with a fused refresh, through `twin.model` (refresh and logits, as
   Python's MaskedLM): with the prefix cache, a block-start pass that fills the cache, then the block (dual cache) or
   the whole suffix (prefix cache alone) through it; without it, the whole sequence every pass. The rows from the
   block's start on, one logits row a position */
async function network(twin, run) {
  var s = run.s, hi = (run.block + 1) * s.block_length, start = run.P + run.block * s.block_length;
  var view = run.x.slice(0, run.end()), out;
  if (s.prefix_cache && run.passes === 0) {
    out = await twin.model.refresh(view, start);
    run.refreshes += 1;
  } else if (!s.prefix_cache) {
    out = await twin.model.logits(view, null, start, null);
  } else {
    out = await twin.model.logits(view, run.cache, start, s.dual_cache ? run.P + hi : null);
  }
  if (s.prefix_cache) run.cache = out.cache;
  run.nfe += 1; run.step += 1; run.passes += 1;
  return out.logits;
}

/* as Dream's top_k_logits: below each row's k-th largest logit is out (ties at it stay) */
function topK(zr, k) {
  var kth = Float64Array.from(zr).sort()[zr.length - k];
  for (var i = 0; i < zr.length; i++) if (zr[i] < kth) zr[i] = -Infinity;
}

function guesses(twin, run, logits) {
  var s = run.s, B = s.block_length, lo = run.block * B, hi = lo + B, z = [], r;
  for (r = 0; r < B; r++) { z.push(Float64Array.from(logits[r])); z[r][twin.mask] = -Infinity; }
  for (r = 0; r < Math.max(0, Math.min(hi, Math.max(0, s.min_length)) - lo); r++) z[r][twin.eos] = -Infinity;
  if (s.no_repeat) noRepeat(z, run, lo, twin);
  if (s.no_repeat_ngram) ngramBan(z, Array.from(run.x), writtenOf(run), blockPositions(run, lo), s.no_repeat_ngram, twin.eos);
  if (s.top_k > 0 && s.top_k < twin.vocab) z.forEach(function (zr) { topK(zr, s.top_k); });
  var probs = z.map(softmax), chosen = pickTokens(run, z);
  var sure = chosen.map(function (c, i) { return probs[i][c]; });
  for (r = 0; r < B; r++) if (run.masked[lo + r]) run.conf[lo + r] = sure[r];
  for (var a = hi; a < run.end() - run.P && logits.length > B; a++) {  // right of the block, for display only
    if (!run.masked[a]) continue;
    var raw = logits[a - lo], m = raw[argmax(raw)], sum = 0;
    for (var i = 0; i < raw.length; i++) sum += Math.exp(raw[i] - m);
    run.conf[a] = 1 / sum;
  }
  return {probs: probs, chosen: chosen, sure: sure};
}

/* each row's guess: the likeliest token at temperature 0, else Gumbel-max in float64 over one uniform draw per
   (row, token), drawn row by row as numpy's run.rng.random(z.shape) */
function pickTokens(run, z) {
  var T = run.s.temperature;
  if (!(T > 0)) return z.map(argmax);
  var V = z[0].length, u = run.rng.random(z.length * V);
  return z.map(function (zr, r) {
    var g = new Float64Array(V);
    for (var i = 0; i < V; i++) g[i] = zr[i] / T - Math.log(-Math.log(Math.min(Math.max(u[r * V + i], 1e-300), 1.0)));
    return argmax(g);
  });
}

/* `_scores`: higher is committed first (random: one draw per candidate) */
function scores(g, cand, scoring, rng) {
  if (scoring === "random") return Array.from(rng.random(cand.length));
  return cand.map(function (c) {
    var p = g.probs[c], i;
    if (scoring === "confidence") return p[g.chosen[c]];
    if (scoring === "margin") {
      var top = -Infinity, second = -Infinity;
      for (i = 0; i < p.length; i++) {
        if (p[i] > top) { second = top; top = p[i]; } else if (p[i] > second) second = p[i];
      }
      return top - second;
    }
    var t = new Float64Array(p.length);  // entropy: exp(-entropy)
    for (i = 0; i < p.length; i++) t[i] = p[i] * Math.log(Math.max(p[i], 1e-300));
    return Math.exp(npSum(t, 0, t.length));
  });
}

/* `_parallel`: how many of the surest positions threshold / factor call safe to commit together */
function parallel(sure, s) {
  var sorted = sure.slice().sort(function (a, b) { return b - a; }), k = 0;
  if (s.threshold !== null) k = sorted.filter(function (v) { return v >= s.threshold; }).length;
  if (s.factor !== null) {
    for (var n = sorted.length; n >= 1; n--) {
      if (sorted[n - 1] >= 1.0 - s.factor / (n + 1)) { k = Math.max(k, n); break; }
    }
  }
  return k;
}

/* `dream_count`: Dream's share 1 - s/t of the masked positions, t and s from torch.linspace in float32 */
export function dreamCount(masked, i, steps) {
  if (i >= steps - 1) return masked;
  var f = Math.fround, eps = f(1e-3), step = f(f(eps - 1) / steps);
  var point = function (k) {  // torch.linspace: from the start in the first half, from the end after
    return k < Math.floor((steps + 1) / 2) ? f(1 + f(step * k)) : f(eps - f(step * (steps - k)));
  };
  return Math.trunc(f(masked * f(1 - f(point(i + 1) / point(i)))));
}

function roundHalfEven(x) {
  var r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 ? r - 1 : r;
}

/* `dllm_counts`: round(left x (1 - s/t)) each step, s/t in float32, steps that commit none dropped */
export function dllmCounts(masked, steps) {
  var f = Math.fround, left = masked, counts = [];
  for (var j = 0; j < steps && left; j++) {
    var t = (steps - j) / steps, s = (steps - 1 - j) / steps;
    var ratio = f(f(1 - f(1 - f(s))) / f(1 - f(1 - f(t))));
    var n = Math.min(roundHalfEven(left * (1.0 - ratio)), left);
    left -= n;
    if (n) counts.push(n);
  }
  return counts;
}

function scheduled(run, cand) {
  var s = run.s;
  if (s.schedule === "dream") return dreamCount(cand.length, run.passes - 1, run.budget());
  if (s.schedule === "dllm") {
    var plan = dllmCounts(s.block_length, Math.ceil(s.steps / (s.gen_length / s.block_length)));
    return run.passes <= plan.length ? plan[run.passes - 1] : cand.length;
  }
  return Math.ceil(cand.length / Math.max(1, run.budget() - (run.passes - 1)));
}

/* `spaced`: the scheduled rows, then the extra ones surest first, each only with no taken row nearer than min_gap */
function spaced(sched, extra, sure, gap) {
  var taken = sched.slice();
  if (gap <= 1) taken = taken.concat(extra);
  else {
    ranked(extra, extra.map(function (r) { return sure[r]; })).forEach(function (r) {
      if (taken.every(function (t) { return Math.abs(r - t) >= gap; })) taken.push(r);
    });
  }
  return Array.from(new Set(taken)).sort(function (a, b) { return a - b; });
}

/* the learned filter's picks among the candidates (the filter off: none, and its view of the passes is not kept) */
function filtered(twin, run, g, cand) {
  var s = run.s, B = s.block_length, lo = run.block * B, P = run.P, f = Math.fround;
  if (s.filter === null) return [];
  for (var r = 0; r < B; r++) {
    run.held[lo + r] = g.chosen[r] === run.guess[lo + r] ? run.held[lo + r] + 1 : 0;
    run.guess[lo + r] = g.chosen[r];
  }
  var feats = features(g.probs, g.chosen, run.x.slice(P + lo, P + lo + B), run.masked.slice(lo, lo + B), twin.eos,
                       run.held.slice(lo, lo + B));
  var safe = filterScore(twin.filter, cand.map(function (c) { return feats[c]; }));
  return cand.filter(function (c, i) {  // float32 as numpy: the discount and the level cast to it
    var v = s.eos_discount < 1 && g.chosen[c] === twin.eos ? f(safe[i] * f(s.eos_discount)) : safe[i];
    return v >= f(s.filter);
  });
}

function rule(twin, run, g) {
  var s = run.s, lo = run.block * s.block_length, cand = [];
  for (var r = 0; r < s.block_length; r++) if (run.masked[lo + r]) cand.push(r);
  var discount = function (v, i) {
    return s.eos_discount < 1 && g.chosen[cand[i]] === twin.eos ? v * s.eos_discount : v;
  };
  var score = scores(g, cand, s.scoring, run.rng).map(discount);
  var sure = cand.map(function (c) { return g.sure[c]; }).map(discount);
  var sched = ranked(cand, score).slice(0, scheduled(run, cand));
  var extra = ranked(cand, sure).slice(0, parallel(sure, s));
  if (s.filter !== null) extra = spaced(extra, filtered(twin, run, g, cand), g.sure, 1);  // np.union1d: sorted
  var rows = spaced(sched, extra, g.sure, s.min_gap);
  if (s.no_repeat) rows = apart(rows, g.chosen, twin.eos, twin.repeatable);
  if (s.no_repeat_ngram) {
    rows = ngramFresh(rows, g.chosen, Array.from(run.x), writtenOf(run), blockPositions(run, lo), s.no_repeat_ngram,
                      twin.eos);
  }
  return rows;
}

function answerLength(run, eos) {
  for (var a = 0; a < run.L; a++) if (!run.masked[a] && run.x[run.P + a] === eos) return a;
  return run.L;
}

/* `commit`: the rows' guesses written, then (with remask, while the block has more than one step left) each earlier
   commit of the block reopened with chance remask x (1 - its confidence), one draw each in position order */
function commit(twin, run, g, rows) {
  var s = run.s, lo = run.block * s.block_length, hi = lo + s.block_length, cands = [], reopened = [];
  var committed = rows.map(function (r) { return lo + r; });
  rows.forEach(function (r) {
    run.x[run.P + lo + r] = g.chosen[r]; run.masked[lo + r] = false; run.conf[lo + r] = g.probs[r][g.chosen[r]];
  });
  if (run.drafted) {  // a draft token's confidence is the model's belief in it now, which remask reads
    for (var d = lo; d < hi; d++) if (run.drafted[d] && !run.masked[d]) run.conf[d] = g.probs[d - lo][run.x[run.P + d]];
  }
  if (s.remask > 0 && run.budget() - (run.passes - 1) > 1) {
    var earlier = [];
    for (var a = lo; a < hi; a++) if (!run.masked[a] && committed.indexOf(a) < 0) earlier.push(a);
    var u = run.rng.random(earlier.length);
    reopened = earlier.filter(function (a, i) { return u[i] < s.remask * (1.0 - run.conf[a]); });
    reopened.forEach(function (a) {
      run.x[run.P + a] = twin.mask; run.masked[a] = true; run.conf[a] = g.sure[a - lo];
      if (run.drafted) run.drafted[a] = false;
    });
  }
  committed.concat(reopened).forEach(function (a) {
    cands.push([a, namedCandidates(twin, topCandidates(g.probs[a - lo], twin.topCandidates))]);
  });
  var n = answerLength(run, twin.eos), open = run.masked.slice(0, n).some(Boolean);
  run.done = (s.stop_at_eos && n < run.L && !open) || !run.masked.some(Boolean);
  return diffusionFrame(twin, run, committed, cands, reopened);
}

function shownStrings(tok, ids, shown, eos) {
  var out = new Array(ids.length).fill(""), runIdx = [];
  var flush = function () {
    tok.strings(runIdx.map(function (i) { return ids[i]; })).forEach(function (p, k) { out[runIdx[k]] = p; });
    runIdx = [];
  };
  for (var i = 0; i < ids.length; i++) {
    if (shown[i] && ids[i] !== eos) { runIdx.push(i); continue; }
    flush();
    if (shown[i]) out[i] = EOS_MARK;
  }
  flush();
  return out;
}

/* a frame as app/sources/local.py `_diffusion_fields` makes it: the last cut at the answer's end-of-text */
function diffusionFrame(twin, run, committed, cands, reopened) {
  var n = run.done ? answerLength(run, twin.eos) : run.L, ids = run.x.slice(run.P, run.P + n);
  var masked = run.masked.slice(0, n);
  cands = (cands || []).filter(function (c) { return c[0] < n; }).sort(function (a, b) { return a[0] - b[0]; });
  return {step: run.step, nfe: run.nfe, refreshes: run.refreshes, final: run.done, masked: masked,
          tokens: shownStrings(twin.tok, ids, masked.map(function (m) { return !m; }), twin.eos),
          confidence: Array.from(run.conf.slice(0, n), round4), candidates: cands.length ? cands : null,
          committed: committed.filter(function (i) { return i < n; }).sort(function (a, b) { return a - b; }),
          remasked: (reopened || []).filter(function (i) { return i < n; }).length ?
            reopened.filter(function (i) { return i < n; }) : null,
          text: run.done ? twin.tok.decode(ids) : null, ids: run.done ? ids : undefined,
          usage: run.done ? {prompt_tokens: run.P, completion_tokens: n} : null,
          revision: run.plan ? letters(run.plan, ids, masked) : null};
}

/* the twin's race (`generate`): the start (all masked, or a revise `plan` laid down), a frame a pass; a draft that
   leaves nothing to fill ends at once, its answer the draft, in no pass */
export async function diffusionRace(twin, prompt, s, onFrame, signal, plan) {
  var run = new DiffRun(prompt, s, twin.mask), frames = [], t0 = now(), last = null;
  var emit = function (f) { f.t = now() - t0; frames.push(f); last = f; return tell(onFrame, f); };
  if (plan) run.startFrom(plan, twin.mask);
  await emit(diffusionFrame(twin, run, []));
  while (run.nextBlock()) {
    if (stopped(signal)) break;
    var g = guesses(twin, run, await network(twin, run));
    await emit(commit(twin, run, g, rule(twin, run, g)));
    if (run.done) break;
  }
  if (!run.done && !run.masked.some(Boolean)) {
    run.done = true;
    await emit(Object.assign(diffusionFrame(twin, run, []), {refreshes: 0}));
  }
  return {frames: frames, text: last.text || "", ids: last.ids || [], nfe: run.nfe, refreshes: run.refreshes,
          stopped: !run.done, settings: s};
}

