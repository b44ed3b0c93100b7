/* Converge in the browser: the built-in twins' samplers over their ONNX graphs, with the twins' settings.
 *
 * The one JavaScript copy of the sampler logic (app/engine/diffusion.py, stutter.py, commit_filter.py's features and
 * network, autoregressive.py, sampling.py's top candidates, the tokenizer's encode and decode, and the frames of
 * app/sources/local.py); tests/test_site.py keeps it equal to Python, token for token and pass for pass, under a table
 * of varied settings. Every setting of both twins but pins is honoured as Python computes it, the random draws from
 * numpy's generator (app/site/rng.js, loaded first) in Python's order; the settings are checked against the Python
 * declarations twins.json carries, and anything else is refused by name.
 * `window.converge.race(prompt, options)` returns a promise of {left, right}: frames, text, ids and nfe each, the
 * settings that side ran with, and `stopped` when options.signal (an AbortSignal) ended it before its answer did.
 * long: the one copy of both samplers, kept in one file that loads as one plain script (no modules from a file).
 */
(function (global) {
"use strict";

var PRETOKEN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;
var EOS_MARK = "<eos>";

/* ---- the tokenizer: byte-level BPE from app/engine/tokenizer.py's tokenizer.json, as the site exported it ---- */

function Tokenizer(data) {
  this.bytes = data.bytes.map(function (b) { return Uint8Array.from(b); });
  this.vocab = new Map(data.pieces.map(function (p, i) { return [p, i]; }));
  this.ranks = new Map(data.merges.map(function (m, i) { return [m[0] + "\u0000" + m[1], i]; }));
  this.byteChar = data.byte_chars;
  this.utf8 = new TextEncoder();
}

Tokenizer.prototype.bpe = function (word) {
  var parts = Array.from(word);
  while (parts.length > 1) {
    var best = -1, rank = Infinity;
    for (var i = 0; i < parts.length - 1; i++) {
      var r = this.ranks.get(parts[i] + "\u0000" + parts[i + 1]);
      if (r !== undefined && r < rank) { rank = r; best = i; }
    }
    if (best < 0) break;
    parts.splice(best, 2, parts[best] + parts[best + 1]);
  }
  var vocab = this.vocab;
  return parts.map(function (p) { return vocab.get(p); });
};

Tokenizer.prototype.encode = function (text) {
  var out = [], self = this;
  (text.match(PRETOKEN) || []).forEach(function (piece) {
    var word = Array.from(self.utf8.encode(piece), function (b) { return self.byteChar[b]; }).join("");
    Array.prototype.push.apply(out, self.bpe(word));
  });
  return out;
};

Tokenizer.prototype.decode = function (ids) {
  var self = this, n = 0;
  ids.forEach(function (i) { n += self.bytes[i].length; });
  var all = new Uint8Array(n), at = 0;
  ids.forEach(function (i) { all.set(self.bytes[i], at); at += self.bytes[i].length; });
  return new TextDecoder("utf-8").decode(all);
};

Tokenizer.prototype.strings = function (ids) {
  var dec = new TextDecoder("utf-8"), self = this;
  return ids.map(function (i, k) { return dec.decode(self.bytes[i], {stream: k < ids.length - 1}); });
};

/* ---- the network: one ONNX graph per twin (app/site/graph.py), its key/value cache carried between passes ---- */

function Net(ort, session, config) {
  this.ort = ort; this.session = session; this.config = config;
  var h = config.n_head, d = config.n_embd / config.n_head;
  this.empty = new ort.Tensor("float32", new Float32Array(0), [config.n_layer, h, 0, d]);
}

var queue = Promise.resolve();  // one pass at a time: the two sides take turns on the one WebAssembly thread

Net.prototype.run = function (ids, pos0, cache) {
  var self = this, ort = this.ort;
  var job = queue.then(function () {
    var past = cache || {k: self.empty, v: self.empty};
    var feed = {ids: new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [ids.length]),
                pos0: new ort.Tensor("int64", BigInt64Array.of(BigInt(pos0)), []), past_k: past.k, past_v: past.v};
    return self.session.run(feed).then(function (out) {
      return {logits: out.logits.data, k: out.present_k, v: out.present_v};
    });
  });
  queue = job.catch(function () {});
  return job;
};

function row(logits, r, V) { return logits.subarray(r * V, (r + 1) * V); }

function argmax(z) {
  var best = 0;
  for (var i = 1; i < z.length; i++) if (z[i] > z[best]) best = i;
  return best;
}

/* numpy's sum of float64s (pairwise_sum in its loops: 8 accumulators up to 128 values, halves beyond), so a sum of
   the same values has the same bits as Python's; Math.exp is not numpy's exp, which can differ in the last bit */
function npSum(a, lo, n) {
  var i, res = 0;
  if (n < 8) { for (i = lo; i < lo + n; i++) res += a[i]; return res; }
  if (n <= 128) {
    var r = [a[lo], a[lo + 1], a[lo + 2], a[lo + 3], a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]];
    for (i = 8; i < n - (n % 8); i += 8) for (var j = 0; j < 8; j++) r[j] += a[lo + i + j];
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; i++) res += a[lo + i];
    return res;
  }
  var half = Math.floor(n / 2);
  half -= half % 8;
  return npSum(a, lo, half) + npSum(a, lo + half, n - half);
}

function softmax(z) {
  var m = z[argmax(z)], p = new Float64Array(z.length), i;
  for (i = 0; i < z.length; i++) p[i] = Math.exp(z[i] - m);
  var sum = npSum(p, 0, p.length);
  for (i = 0; i < z.length; i++) p[i] /= sum;
  return p;
}

function now() { return (global.performance || Date).now() / 1000; }

/* hands a frame to the watcher, then yields one task so the page can draw it (the passes themselves never yield:
   without a watcher, as in the API's plain calls, nothing waits) */
function tell(onFrame, f) {
  if (!onFrame) return null;
  onFrame(f);
  var ch = new MessageChannel();
  return new Promise(function (done) { ch.port1.onmessage = function () { done(); }; ch.port2.postMessage(0); });
}

/* ---- the AR twin: prefill, then one cached decode a token (app/engine/autoregressive.py `generate`, `pick`) ---- */

/* one token from next-token logits: [id, its probability under the model's softmax, that softmax]; greedy at
   temperature 0, else sampled as `pick` does: the tempered distribution ordered (stable), cut to top_k, then to the
   fewest whose running sum reaches top_p, and one rng.choice among them */
function pick(z, s, rng) {
  var probs = softmax(z), i;
  if (s.temperature === 0) return [argmax(z), probs[argmax(z)], probs];
  var m = z[argmax(z)], q = new Float64Array(z.length);
  for (i = 0; i < z.length; i++) q[i] = Math.exp((z[i] - m) / s.temperature);
  var total = npSum(q, 0, q.length);
  for (i = 0; i < q.length; i++) q[i] /= total;
  var order = ranked(Array.from(q.keys()), Array.from(q));
  var keep = s.top_k === 0 ? order.length : Math.min(s.top_k, order.length);
  if (s.top_p < 1.0) {
    var run = 0, below = 0;  // np.searchsorted(np.cumsum(q[order]), top_p): how many running sums are below it
    for (i = 0; i < order.length; i++) { run += q[order[i]]; if (run < s.top_p) below++; else break; }
    keep = Math.min(keep, below + 1);
  }
  var kept = order.slice(0, keep), qk = Float64Array.from(kept, function (t) { return q[t]; });
  var sum = npSum(qk, 0, qk.length), token = rng.choice(kept, Array.from(qk, function (v) { return v / sum; }));
  return [token, probs[token], probs];
}

async function arRace(twin, prompt, s, onFrame, signal) {
  var net = twin.net, eos = twin.eos, V = twin.vocab, ids = [], conf = [], cache = null, t0 = now(), frames = [];
  var rng = global.ConvergeRandom.defaultRng(s.seed);
  var emit = function (f) { f.t = now() - t0; frames.push(f); return tell(onFrame, f); };
  for (var i = 0; i < s.gen_length && !stopped(signal); i++) {
    var out = cache ? await net.run([ids[ids.length - 1]], cache.k.dims[2], cache)
                    : await net.run([eos].concat(prompt), 0, null);
    cache = out;
    var z = Float64Array.from(row(out.logits, out.logits.length / V - 1, V));
    if (i < s.min_length) z[eos] = -Infinity;
    var seq = prompt.concat(ids, [-1]), written = seq.map(function (t, k) { return k < seq.length - 1; });
    ngramBan([z], seq, written, [seq.length - 1], s.no_repeat_ngram, eos);  // transformers' rule: the next position
    var got = pick(z, s, rng), token = got[0];
    var stop = s.stop_at_eos && token === eos, last = stop || i + 1 === s.gen_length;
    if (!stop) { ids.push(token); conf.push(got[1]); }  // without stop_at_eos end-of-text is written on, as Python
    await emit({step: i + 1, nfe: i + 1, final: last, tokens: twin.tok.strings(ids), confidence: conf.map(pyRound4),
          committed: stop ? null : [i], text: last ? twin.tok.decode(ids) : null,
          candidates: stop ? null : [[i, namedCandidates(twin, topCandidates(got[2], twin.topCandidates))]],
          usage: last ? {prompt_tokens: prompt.length, completion_tokens: ids.length} : null});
    if (last) break;
  }
  return {frames: frames, text: twin.tok.decode(ids), ids: ids, nfe: frames.length ? frames[frames.length - 1].nfe : 0,
          stopped: !(frames.length && frames[frames.length - 1].final), settings: s};
}

/* whether the caller has asked the race to stop (options.signal, an AbortSignal): checked before each pass, so a
   stopped side keeps every frame it made */
function stopped(signal) { return !!(signal && signal.aborted); }

/* numpy's np.round(x, 4): x scaled, rounded to the nearest (the diffusion frames' confidences) */
function round4(x) { return Math.round(x * 1e4) / 1e4; }

/* Python's round(x, 4), exact (the AR frames' confidences and every candidate's probability, as local.py) */
function pyRound4(x) { return Number(x.toFixed(4)); }


/* ---- the masked twin's stutter guard (app/engine/stutter.py) ---- */

function guarded(token, eos, repeatable) { return token !== eos && !repeatable[token]; }

function noRepeat(z, run, lo, twin) {
  for (var r = 0; r < z.length; r++) {
    [lo + r - 1, lo + r + 1].forEach(function (nb) {
      if (nb >= run.L || (nb >= 0 && run.masked[nb])) return;
      var token = run.x[run.P + nb];
      if (guarded(token, twin.eos, twin.repeatable)) z[r][token] = -Infinity;
    });
  }
}

function writtenOf(run) {
  var w = [];
  for (var i = 0; i < run.x.length; i++) w.push(i < run.P || !run.masked[i - run.P]);
  return w;
}

/* ---- the guard against repeated runs every twin runs alike (app/engine/repeats.py `NoRepeatNGram`) ---- */

function runKey(tokens, start, n, skip) {
  var k = [];
  for (var i = start; i < start + n; i++) if (i !== skip) k.push(tokens[i]);
  return k.join(",");
}

function completeRuns(tokens, written, n, eos) {
  var done = [];
  for (var i = 0; i + n <= tokens.length; i++) {
    var ok = true;
    for (var k = i; k < i + n && ok; k++) ok = written[k] && tokens[k] !== eos;
    if (ok) done.push(i);
  }
  return done;
}

/* `ban`: in row r of z, every token that written at positions[r] would complete a run of n tokens already there */
function ngramBan(z, tokens, written, positions, n, eos) {
  if (n < 2) return;
  var holes = new Map();
  completeRuns(tokens, written, n, eos).forEach(function (i) {
    for (var j = 0; j < n; j++) {
      var key = j + ":" + runKey(tokens, i, n, i + j);
      if (!holes.has(key)) holes.set(key, new Set());
      holes.get(key).add(tokens[i + j]);
    }
  });
  positions.forEach(function (pos, r) {
    var through = [];
    for (var j = 0; j < n; j++) {
      var start = pos - j, ok = start >= 0 && start + n <= tokens.length;
      for (var k = start; k < start + n && ok; k++) ok = k === pos || written[k];
      if (!ok) continue;
      through.push(start);
      (holes.get(j + ":" + runKey(tokens, start, n, pos)) || []).forEach(function (t) { z[r][t] = -Infinity; });
    }
    if (through.length > 1) twoAlike(z[r], tokens, through, pos, n, eos);
  });
}

function twoAlike(zr, tokens, through, pos, n, eos) {
  var seen = new Set();
  through.forEach(function (start) {
    for (var k = start; k < start + n; k++) if (k !== pos) seen.add(tokens[k]);
  });
  seen.forEach(function (token) {
    var runs = new Set(through.map(function (start) {
      var t = []; for (var k = start; k < start + n; k++) t.push(k === pos ? token : tokens[k]); return t.join(",");
    }));
    if (runs.size < through.length && token !== eos) zr[token] = -Infinity;
  });
}

/* `fresh`: of the rows one pass writes together, left to right, those that make no new repeated run */
function ngramFresh(rows, chosen, tokens, written, positions, n, eos) {
  var sorted = rows.slice().sort(function (a, b) { return a - b; });
  if (n < 2) return sorted;
  tokens = tokens.slice(); written = written.slice();
  var keep = [], repeats = function () {
    var runs = completeRuns(tokens, written, n, eos).map(function (i) { return tokens.slice(i, i + n).join(","); });
    return runs.length - new Set(runs).size;
  };
  var before = repeats();
  sorted.forEach(function (r) {
    var pos = positions[r], old = [tokens[pos], written[pos]];
    tokens[pos] = chosen[r]; written[pos] = true;
    var after = repeats();
    if (keep.length && after > before) { tokens[pos] = old[0]; written[pos] = old[1]; return; }
    keep.push(r); before = after;
  });
  return keep;
}

/* the block's positions in the whole sequence, as the guard reads them */
function blockPositions(run, lo) {
  var out = [];
  for (var r = 0; r < run.s.block_length; r++) out.push(run.P + lo + r);
  return out;
}

function apart(pick, chosen, eos, repeatable) {
  return pick.filter(function (r) {
    return !(pick.indexOf(r - 1) >= 0 && chosen[r] === chosen[r - 1] && guarded(chosen[r], eos, repeatable));
  });
}

/* ---- the learned commit filter: its features and its one-hidden-layer network, in float32 as numpy ---- */

function features(probs, chosen, ids, masked, eos, held) {
  var B = chosen.length, V = probs[0].length, f = Math.fround, out = [], first = masked.indexOf(true);
  var sure = [], shown = [], maskedLeft = [], left = 0, share = 0;
  for (var r = 0; r < B; r++) {
    sure.push(masked[r] ? probs[r][chosen[r]] : 1.0); shown.push(masked[r] ? chosen[r] : ids[r]);
    maskedLeft.push(left); left += masked[r] ? 1 : 0;
  }
  share = left / B;
  for (r = 0; r < B; r++) {
    var p = probs[r], top = p[chosen[r]], terms = new Float64Array(V), sorted = Float64Array.from(p).sort();
    for (var i = 0; i < V; i++) terms[i] = p[i] * Math.log(Math.max(p[i], 1e-30));
    var ent = -npSum(terms, 0, V);
    out.push([top, top - sorted[V - 2], ent / Math.log(V), r / B, share, r === 0 || !masked[r - 1],
              r < B - 1 && !masked[r + 1], r === (first < 0 ? 0 : first), maskedLeft[r] / B,
              r === 0 ? 1.0 : sure[r - 1], r < B - 1 ? sure[r + 1] : 0.0, chosen[r] === (r === 0 ? -1 : shown[r - 1]),
              chosen[r] === eos, Math.min(held[r], 4) / 4, held[r] > 0].map(function (v) { return f(+v); }));
  }
  return out;
}

function filterScore(w, feats) {
  var f = Math.fround, H = w.b1.length;
  return feats.map(function (x) {
    var z = x.map(function (v, i) { return f(f(v - w.mean[i]) / w.scale[i]); }), y = 0;
    for (var j = 0; j < H; j++) {
      var a = 0;
      for (var i = 0; i < z.length; i++) a += z[i] * w.w1[i][j];
      y += f(Math.tanh(f(f(a) + w.b1[j]))) * w.w2[j];
    }
    return f(1 / (1 + Math.exp(-f(f(y) + w.b2[0]))));
  });
}

/* ---- the diffusion twin (app/engine/diffusion.py: begin, next_block, forward, commit) ---- */

function DiffRun(prompt, s, mask) {
  this.s = s; this.P = prompt.length; this.L = s.gen_length;
  this.x = prompt.concat(new Array(s.gen_length).fill(mask));
  this.masked = new Array(s.gen_length).fill(true);
  this.conf = new Float64Array(s.gen_length);
  this.guess = new Array(s.gen_length).fill(-1);
  this.held = new Array(s.gen_length).fill(0);
  this.block = 0; this.passes = 0; this.cache = null; this.nfe = 0; this.step = 0; this.refreshes = 0;
  this.done = false;
  this.rng = global.ConvergeRandom.defaultRng(s.seed);  // numpy's default_rng(seed), drawn in Python's order
}

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

/* one pass as `_network` makes it for a twin with a fused refresh: with the prefix cache, a block-start pass over the
   whole sequence that fills the cache, then the block (dual cache) or the whole suffix (prefix cache alone) from the
   last prefix token on, the rest from the cache; without it, the whole sequence every pass */
async function network(twin, run) {
  var s = run.s, lo = run.block * s.block_length, hi = lo + s.block_length, start = run.P + lo, end = run.end();
  var seq = [twin.eos].concat(run.x.slice(0, end)), out, first = 0, count = end - start;
  if (!s.prefix_cache || run.passes === 0) {
    out = await twin.net.run(seq, 0, null);
    first = start;
    if (s.prefix_cache) { run.cache = {k: out.k, v: out.v}; run.refreshes += 1; }
  } else if (s.dual_cache) {  // DualCache: the block's keys and values replace theirs in the cache
    out = await twin.net.run(seq.slice(start, run.P + hi + 1), start, run.cache);
    run.cache = {k: out.k, v: out.v}; count = hi - lo;
  } else {  // the prefix cache alone: its first `start` positions are read, the suffix recomputed
    out = await twin.net.run(seq.slice(start), start, run.cache);
  }
  run.nfe += 1; run.step += 1; run.passes += 1;
  var rows = [];
  for (var r = 0; r < count; r++) rows.push(row(out.logits, first + r, twin.vocab));
  return rows;
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

/* the candidates in the order np.argsort(-score, kind="stable") gives them */
function ranked(cand, score) {
  return cand.map(function (c, i) { return [c, score[i]]; })
    .sort(function (a, b) { return b[1] - a[1]; }).map(function (e) { return e[0]; });
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
function dreamCount(masked, i, steps) {
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
function dllmCounts(masked, steps) {
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

/* `top_candidates`: the k likeliest (token, probability) pairs of one distribution, best first */
function topCandidates(p, k) {
  var idx = [];
  for (var i = 0; i < p.length; i++) idx.push(i);
  return idx.sort(function (a, b) { return p[b] - p[a] || a - b; }).slice(0, k).map(function (t) { return [t, p[t]]; });
}

/* `named_candidates`: [display string, probability rounded to 4 places as Python's round], end-of-text as EOS_MARK */
function namedCandidates(twin, cands) {
  var names = twin.tok.strings(cands.map(function (c) { return c[0]; }));
  return cands.map(function (c, i) { return [c[0] === twin.eos ? EOS_MARK : names[i], pyRound4(c[1])]; });
}

/* `commit`: the rows' guesses written, then (with remask, while the block has more than one step left) each earlier
   commit of the block reopened with chance remask x (1 - its confidence), one draw each in position order */
function commit(twin, run, g, rows) {
  var s = run.s, lo = run.block * s.block_length, hi = lo + s.block_length, cands = [], reopened = [];
  var committed = rows.map(function (r) { return lo + r; });
  rows.forEach(function (r) {
    run.x[run.P + lo + r] = g.chosen[r]; run.masked[lo + r] = false; run.conf[lo + r] = g.probs[r][g.chosen[r]];
  });
  if (s.remask > 0 && run.budget() - (run.passes - 1) > 1) {
    var earlier = [];
    for (var a = lo; a < hi; a++) if (!run.masked[a] && committed.indexOf(a) < 0) earlier.push(a);
    var u = run.rng.random(earlier.length);
    reopened = earlier.filter(function (a, i) { return u[i] < s.remask * (1.0 - run.conf[a]); });
    reopened.forEach(function (a) {
      run.x[run.P + a] = twin.mask; run.masked[a] = true; run.conf[a] = g.sure[a - lo];
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
          usage: run.done ? {prompt_tokens: run.P, completion_tokens: n} : null};
}

async function diffusionRace(twin, prompt, s, onFrame, signal) {
  var run = new DiffRun(prompt, s, twin.mask), frames = [], t0 = now(), last = null;
  var emit = function (f) { f.t = now() - t0; frames.push(f); last = f; return tell(onFrame, f); };
  await emit(diffusionFrame(twin, run, []));
  while (!stopped(signal) && run.nextBlock()) {
    var g = guesses(twin, run, await network(twin, run));
    await emit(commit(twin, run, g, rule(twin, run, g)));
    if (run.done) break;
  }
  return {frames: frames, text: last.text || "", ids: last.ids || [], nfe: run.nfe, refreshes: run.refreshes,
          stopped: !run.done, settings: s};
}

/* ---- loading and the API: window.converge.race(prompt, options) ---- */

/* ---- the settings: each read and checked against its Python declaration (twins.json `declared`, written for
   app/sources/local.py BROWSER_SETTINGS), as options.py `coerce` and `check` and the samplers' `validate` do ---- */

var TWIN_NAMES = {diffusion: "diffusion twin", ar: "AR twin"};
var OWN_OPTIONS = ["onFrame", "only", "signal", "length", "ar"];  // the API's own: not a twin's setting
var FOLLOW = {};  // read for a setting given as 0 or null that follows another (steps: the answer length)
/* what the samplers here assume of a twin's settings that are not offered: its defaults must say so */
var FIXED = {diffusion: {pins: []}, ar: {}};

function number(x) { return String(x); }

/* `bounds`: what a number may be, as a sentence says it */
function bounds(decl, d, top) {
  var hi = typeof d.max === "string" ? "the " + decl[d.max].name.toLowerCase() + (top == null ? "" : " (" + top + ")")
                                      : d.max == null ? null : number(d.max);
  var low = number(d.min || 0);
  if (d.off) return "above " + low + " and at most " + hi + " (or off)";
  return hi === null ? "at least " + low : "between " + low + " and " + hi;
}

/* one given value as its declared type (`_read`), or a sentence naming the setting */
function read(key, d, v) {
  if (d.follows && (v === null || v === 0)) return FOLLOW;
  if (d.off && (v === null || v === 0)) return null;
  var fix = "not " + JSON.stringify(v) + ": change " + key + ".", bad = null;
  if (d.type === "bool" && typeof v !== "boolean") bad = " must be on or off (true or false), ";
  else if (d.type === "str" && (d.choices || []).indexOf(v) < 0) bad = " must be one of " + d.choices.join(", ") + ", ";
  else if (d.type !== "bool" && d.type !== "str" && !Number.isFinite(v)) bad = " must be a number, ";
  else if (d.type === "int" && !Number.isInteger(v)) bad = " must be a whole number, ";
  if (bad) throw new Error(d.name + bad + fix);
  return v;
}

/* `check`: every offered setting within its declared range (a maximum may name another setting) */
function check(s, decl) {
  Object.keys(decl).forEach(function (key) {
    var d = decl[key], v = s[key];
    if ((d.off && v === null) || (d.type !== "int" && d.type !== "float")) return;
    var hi = typeof d.max === "string" ? s[d.max] : d.max;
    if (!(d.off ? d.min < v : d.min <= v) || (hi != null && v > hi)) {
      throw new Error(d.name + " must be " + bounds(decl, d, hi) + ", not " + v + ": change " + key + ".");
    }
  });
}

/* the rules between settings: `sampling.check_blocks` and `DiffusionSettings.validate` */
function checkRules(s) {
  var n = s.gen_length, b = s.block_length;
  if (n % b) {
    var near = 1;
    for (var d = 1; d <= n; d++) if (n % d === 0 && Math.abs(d - b) < Math.abs(near - b)) near = d;
    throw new Error("Block length " + b + " does not divide the generation length " + n + ": use a block length " +
                    "such as " + near + ", or change the length.");
  }
  if (s.steps < n / b) {
    throw new Error(s.steps + " steps cannot cover " + n / b + " blocks (at least one step each): raise steps to " +
                    n / b + " or use longer blocks.");
  }
  if (s.threshold !== null && s.factor !== null) {
    throw new Error("Choose a confidence threshold or a factor for parallel decoding, not both.");
  }
}

function refusal(kind, key, decl) {
  if (key === "pins") {
    return new Error("Pinned text (pins) runs on the server only: the browser race does not offer it.");
  }
  if (key === "gen_length") return new Error("Give the answer length as length (both twins race one length).");
  return new Error("The browser race does not offer " + key + " for the " + TWIN_NAMES[kind] + "; it offers " +
                   Object.keys(decl).filter(function (k) { return k !== "gen_length"; }).join(", ") +
                   " and the answer length (length).");
}

/* a twin's settings from the given ones (`coerce`: read, clamped, followed, replaced, then checked) */
function settingsFor(kind, base, decl, given, length) {
  var s = Object.assign({}, base), set = {}, follow = [];
  Object.keys(decl).forEach(function (k) { if (decl[k].follows && !(k in given)) follow.push(k); });
  Object.keys(given).forEach(function (k) {
    if (!(k in decl) || k === "gen_length") throw refusal(kind, k, decl);
    var v = read(k, decl[k], given[k]);
    if (v === FOLLOW) follow.push(k); else set[k] = v;
  });
  if (length !== undefined) set.gen_length = read("length", decl.gen_length, length);
  Object.assign(s, set);
  Object.keys(decl).forEach(function (k) {
    var d = decl[k], hi = typeof d.max === "string" ? s[d.max] : d.max;
    if (d.clamp && s[k] !== null) s[k] = hi == null ? Math.max(d.min, s[k]) : Math.min(Math.max(d.min, s[k]), hi);
  });
  follow.forEach(function (k) { s[k] = s[decl[k].follows]; });
  Object.keys(decl).forEach(function (k) {
    var r = decl[k].replaces;
    if (r && set[k] != null && (r in set ? set[r] : base[r]) === base[r]) s[r] = null;
  });
  check(s, decl);
  if (kind === "diffusion") checkRules(s);
  return s;
}

/* the samplers here run what their twin's defaults say of the settings not offered, or refuse to load */
function checkFixed(kind, base, decl) {
  Object.keys(FIXED[kind]).forEach(function (k) {
    if (!(k in decl) && JSON.stringify(base[k]) !== JSON.stringify(FIXED[kind][k])) {
      throw new Error("The browser's " + TWIN_NAMES[kind] + " runs " + k + " = " + JSON.stringify(FIXED[kind][k]) +
                      " only; the twin's defaults now say " + JSON.stringify(base[k]) + ".");
    }
  });
}

/* the diffusion twin's given settings (the options' own keys aside) */
function diffusionGiven(options) {
  var out = {};
  Object.keys(options).forEach(function (k) { if (OWN_OPTIONS.indexOf(k) < 0) out[k] = options[k]; });
  return out;
}

function promptIds(twin, prompt, length, maxLen) {
  var text = String(prompt == null ? "" : prompt);
  if (!text.trim()) throw new Error("The prompt is empty: type a prompt.");
  var ids = twin.tok.encode(text.trimEnd());  // the twins continue text: no trailing spaces (app/sources/local.py)
  if (ids.length + length > maxLen) {
    var n = ids.length + (ids.length === 1 ? " token" : " tokens");  // as app/errors.py `counted` writes a count
    throw new Error("Prompt (" + n + ") plus answer length (" + length + ") exceeds the model's " +
                    "context of " + maxLen + " tokens: shorten the prompt or the length.");
  }
  return ids;
}

function fromFolder(base) {
  return {
    setup: function (ort) { ort.env.wasm.wasmPaths = new URL(base + "ort/", global.document.baseURI).href; },
    json: function () { return fetch(base + "twins.json").then(function (r) { return r.json(); }); },
    graph: function (kind) { return Promise.resolve(base + kind + ".onnx"); }
  };
}

async function load(ort, source) {
  ort.env.wasm.numThreads = 1;
  await source.setup(ort);
  var data = await source.json();
  ["diffusion", "ar"].forEach(function (kind) { checkFixed(kind, data.settings[kind], data.declared[kind]); });
  var tok = new Tokenizer(data.tokenizer), made = {};
  for (var kind of ["diffusion", "ar"]) {
    var session = await ort.InferenceSession.create(await source.graph(kind), {executionProviders: ["wasm"]});
    made[kind] = {net: new Net(ort, session, data.config[kind]), tok: tok, eos: data.tokenizer.eos_id,
                  mask: data.tokenizer.mask_id, vocab: data.config[kind].vocab_size,
                  repeatable: data.tokenizer.repeatable, filter: data.filter, topCandidates: data.top_candidates};
  }
  return {twins: made, settings: data.settings, declared: data.declared, maxLen: data.config.diffusion.max_len - 1,
          analysis: data.analysis};
}

/* `options`: the diffusion twin's settings by name, the AR twin's under `ar`, both answers' `length`, `onFrame`,
   and `only` (one side races alone: the bench's per-pass times; the other is null) */
function api(loaded) {
  return function race(prompt, options) {
    options = options || {};
    var ds = settingsFor("diffusion", loaded.settings.diffusion, loaded.declared.diffusion, diffusionGiven(options),
                         options.length);
    var as = settingsFor("ar", loaded.settings.ar, loaded.declared.ar, options.ar || {}, options.length);
    var d = loaded.twins.diffusion, a = loaded.twins.ar, onFrame = options.onFrame, only = options.only;
    var pd = promptIds(d, prompt, ds.gen_length, loaded.maxLen);
    var tell = function (side) { return onFrame ? function (f) { onFrame(side, f); } : null; };
    if (only != null && only !== "left" && only !== "right") throw new Error("only must be left or right.");
    var signal = options.signal;  // an AbortSignal: each side stops before its next pass, keeping its frames
    return Promise.all([only === "right" ? null : diffusionRace(d, pd, ds, tell("left"), signal),
                        only === "left" ? null : arRace(a, pd.slice(), as, tell("right"), signal)])
      .then(function (both) { return {left: both[0], right: both[1], prompt_ids: pd}; });
  };
}

/* each twin's offered settings, as the page builds its controls: {kind: {defaults, declared}} */
function controls(loaded) {
  var out = {};
  ["diffusion", "ar"].forEach(function (kind) {
    out[kind] = {defaults: Object.assign({}, loaded.settings[kind]), declared: loaded.declared[kind]};
  });
  return out;
}

/* the folder opened from disk (a file: address): the browser lets a page there fetch none of the folder's files, so it says
   how to open it instead of trying (the single file, which fetches nothing, opens from disk) */
function fromDisk(base) {
  var folder = decodeURIComponent(new URL(base || "./", global.document.baseURI).pathname).replace(/\/$/, "");
  if (/^\/[A-Za-z]:/.test(folder)) folder = folder.slice(1);  // Windows: /C:/Users/... is C:/Users/...
  return new Error("This page was opened from disk, where the browser loads none of its files: open this folder " +
                   "through a web server (python -m http.server -d " + folder + ", and open the address it prints), " +
                   "or build one file that opens from disk with python -m app site converge.html --single-file.");
}

// the folder's files by default; the single file (app/site/single.js) hands over its inlined ones instead
var onDisk = global.location && global.location.protocol === "file:" && !global.CONVERGE_SOURCE;
var ready = onDisk ? Promise.reject(fromDisk(global.CONVERGE_BASE))
  : global.ort ? load(global.ort, global.CONVERGE_SOURCE || fromFolder(global.CONVERGE_BASE || ""))
  : Promise.reject(new Error("onnxruntime-web did not load (ort/ort.wasm.min.js)."));
var racer = ready.then(api);
global.converge = {
  ready: racer.then(function () { return true; }),
  /* what app/site/rows.js reads to build the player's figures: the end-of-text strings and the token units */
  analysis: ready.then(function (loaded) { return loaded.analysis; }),
  /* the diffusion twin's defaults */
  settings: ready.then(function (loaded) { return Object.assign({}, loaded.settings.diffusion); }),
  /* the settings the browser honours, each twin's, with their declarations and defaults: the page's controls */
  controls: ready.then(controls),
  race: function (prompt, options) { return racer.then(function (race) { return race(prompt, options); }); }
};
/* a folder that cannot load rejects each of these; whoever reads one hears why, and none is reported as unhandled */
["ready", "analysis", "settings", "controls"].forEach(function (k) { global.converge[k].catch(function () {}); });
})(typeof window !== "undefined" ? window : this);
