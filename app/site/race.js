/* Converge in the browser: the built-in twins' samplers at the page's defaults, over their ONNX graphs.
 *
 * The one JavaScript copy of the sampler logic (app/engine/diffusion.py, stutter.py, commit_filter.py's features and
 * network, autoregressive.py, the tokenizer's encode and decode); tests/test_site.py keeps it equal to Python, token
 * for token and pass for pass. Only what the page's defaults use is here: greedy AR decoding, and the diffusion twin at
 * TWIN_DIFFUSION (even schedule, entropy order, threshold, learned commit filter, both stutter guards, shortest
 * answer one, blocks with Fast-dLLM's refresh and DualCache). Any other setting is refused by name.
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

function softmax(z) {
  var m = z[argmax(z)], p = new Float64Array(z.length), sum = 0, i;
  for (i = 0; i < z.length; i++) { p[i] = Math.exp(z[i] - m); sum += p[i]; }
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

/* ---- the AR twin: prefill, then one cached decode a token, greedy (app/engine/autoregressive.py) ---- */

async function arRace(twin, prompt, s, onFrame, signal) {
  var net = twin.net, eos = twin.eos, V = twin.vocab, ids = [], conf = [], cache = null, t0 = now(), frames = [];
  var emit = function (f) { f.t = now() - t0; frames.push(f); return tell(onFrame, f); };
  for (var i = 0; i < s.gen_length && !stopped(signal); i++) {
    var out = cache ? await net.run([ids[ids.length - 1]], cache.k.dims[2], cache)
                    : await net.run([eos].concat(prompt), 0, null);
    cache = out;
    var z = Float64Array.from(row(out.logits, out.logits.length / V - 1, V));
    var token = argmax(z), p = softmax(z)[token];
    var last = token === eos || i + 1 === s.gen_length;
    if (token !== eos) { ids.push(token); conf.push(p); }
    await emit({step: i + 1, nfe: i + 1, final: last, tokens: twin.tok.strings(ids), confidence: conf.map(round4),
          committed: token === eos ? null : [i], text: last ? twin.tok.decode(ids) : null,
          usage: last ? {prompt_tokens: prompt.length, completion_tokens: ids.length} : null});
    if (last) break;
  }
  return {frames: frames, text: twin.tok.decode(ids), ids: ids, nfe: frames.length ? frames[frames.length - 1].nfe : 0,
          stopped: !(frames.length && frames[frames.length - 1].final), settings: s};
}

/* whether the caller has asked the race to stop (options.signal, an AbortSignal): checked before each pass, so a
   stopped side keeps every frame it made */
function stopped(signal) { return !!(signal && signal.aborted); }

function round4(x) { return Math.round(x * 1e4) / 1e4; }

/* ---- the stutter guards (app/engine/stutter.py) ---- */

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

function noRepeatNgram(z, run, lo, n, eos) {
  var tokens = Array.from(run.x), written = writtenOf(run), holes = new Map();
  completeRuns(tokens, written, n, eos).forEach(function (i) {
    for (var j = 0; j < n; j++) {
      var key = j + ":" + runKey(tokens, i, n, i + j);
      if (!holes.has(key)) holes.set(key, new Set());
      holes.get(key).add(tokens[i + j]);
    }
  });
  for (var r = 0; r < z.length; r++) {
    var pos = run.P + lo + r, through = [];
    for (var j = 0; j < n; j++) {
      var start = pos - j, ok = start >= 0 && start + n <= tokens.length;
      for (var k = start; k < start + n && ok; k++) ok = k === pos || written[k];
      if (!ok) continue;
      through.push(start);
      (holes.get(j + ":" + runKey(tokens, start, n, pos)) || []).forEach(function (t) { z[r][t] = -Infinity; });
    }
    if (through.length > 1) twoAlike(z[r], tokens, through, pos, n, eos);
  }
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

function freshRuns(pick, chosen, run, lo, n, eos) {
  var tokens = Array.from(run.x), written = writtenOf(run), keep = [];
  var repeats = function () {
    var runs = completeRuns(tokens, written, n, eos).map(function (i) { return tokens.slice(i, i + n).join(","); });
    return runs.length - new Set(runs).size;
  };
  var before = repeats();
  pick.slice().sort(function (a, b) { return a - b; }).forEach(function (r) {
    var pos = run.P + lo + r;
    tokens[pos] = chosen[r]; written[pos] = true;
    var after = repeats();
    if (keep.length && after > before) { tokens[pos] = run.x[pos]; written[pos] = false; return; }
    keep.push(r); before = after;
  });
  return keep;
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
    var p = probs[r], top = p[chosen[r]], ent = 0, sorted = Float64Array.from(p).sort();
    for (var i = 0; i < V; i++) ent -= p[i] * Math.log(Math.max(p[i], 1e-30));
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

/* ---- the diffusion twin at TWIN_DIFFUSION (app/engine/diffusion.py: begin, next_block, forward, commit) ---- */

var FIXED = {scoring: "entropy", schedule: "even", temperature: 0, top_k: 0, factor: null, remask: 0, eos_discount: 1,
             no_repeat: true, min_gap: 1, stop_at_eos: true, prefix_cache: true, dual_cache: true, lookahead: 0};

function checkTwinDefaults(s) {
  Object.keys(FIXED).forEach(function (k) {
    if (s[k] !== FIXED[k]) throw new Error("The browser's diffusion sampler runs " + k + " = " + FIXED[k] +
                                           " only; the twin's defaults now say " + JSON.stringify(s[k]) + ".");
  });
  if (s.filter === null || s.threshold === null || !s.no_repeat_ngram || (s.pins || []).length)
    throw new Error("The browser's diffusion sampler needs the learned filter, a threshold, no repeated runs, no pins.");
}

function DiffRun(prompt, s, mask) {
  this.s = s; this.P = prompt.length; this.L = s.gen_length;
  this.x = prompt.concat(new Array(s.gen_length).fill(mask));
  this.masked = new Array(s.gen_length).fill(true);
  this.conf = new Float64Array(s.gen_length);
  this.guess = new Array(s.gen_length).fill(-1);
  this.held = new Array(s.gen_length).fill(0);
  this.block = 0; this.passes = 0; this.cache = null; this.nfe = 0; this.step = 0; this.refreshes = 0;
  this.done = false;
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

async function network(twin, run) {
  var B = run.s.block_length, lo = run.block * B, hi = lo + B, start = run.P + lo, out, first, count;
  var seq = [twin.eos].concat(run.x);
  if (run.passes === 0) {  // the block-start refresh: the whole sequence, its cache, and the rows from `start` on
    out = await twin.net.run(seq, 0, null);
    first = start; count = run.L - lo; run.refreshes += 1;
  } else {  // DualCache: the last prefix token and the block, the rest from the cache
    out = await twin.net.run(seq.slice(start, run.P + hi + 1), start, run.cache);
    first = 0; count = hi - lo;
  }
  run.cache = {k: out.k, v: out.v};
  run.nfe += 1; run.step += 1; run.passes += 1;
  var rows = [];
  for (var r = 0; r < count; r++) rows.push(row(out.logits, first + r, twin.vocab));
  return rows;
}

function guesses(twin, run, logits) {
  var s = run.s, B = s.block_length, lo = run.block * B, hi = lo + B, z = [], r;
  for (r = 0; r < B; r++) { z.push(Float64Array.from(logits[r])); z[r][twin.mask] = -Infinity; }
  for (r = 0; r < Math.max(0, Math.min(hi, Math.max(0, s.min_length)) - lo); r++) z[r][twin.eos] = -Infinity;
  noRepeat(z, run, lo, twin);
  noRepeatNgram(z, run, lo, s.no_repeat_ngram, twin.eos);
  var probs = z.map(softmax), chosen = z.map(argmax);
  var sure = chosen.map(function (c, i) { return probs[i][c]; });
  for (r = 0; r < B; r++) if (run.masked[lo + r]) run.conf[lo + r] = sure[r];
  for (var a = hi; a < run.L && logits.length > B; a++) {  // right of the block, for display: the top probability
    if (!run.masked[a]) continue;
    var raw = logits[a - lo], m = raw[argmax(raw)], sum = 0;
    for (var i = 0; i < raw.length; i++) sum += Math.exp(raw[i] - m);
    run.conf[a] = 1 / sum;
  }
  return {probs: probs, chosen: chosen, sure: sure};
}

function ranked(cand, score) {
  return cand.map(function (c, i) { return [c, score[i]]; })
    .sort(function (a, b) { return b[1] - a[1]; }).map(function (e) { return e[0]; });
}

function rule(twin, run, g) {
  var s = run.s, B = s.block_length, lo = run.block * B, P = run.P, cand = [], r;
  for (r = 0; r < B; r++) if (run.masked[lo + r]) cand.push(r);
  var scores = cand.map(function (c) {
    var p = g.probs[c], t = 0;
    for (var i = 0; i < p.length; i++) t += p[i] * Math.log(Math.max(p[i], 1e-300));
    return Math.exp(t);
  });
  var sure = cand.map(function (c) { return g.sure[c]; });
  var minimum = Math.ceil(cand.length / Math.max(1, run.budget() - (run.passes - 1)));
  var pick = new Set(ranked(cand, scores).slice(0, minimum));
  ranked(cand, sure).slice(0, sure.filter(function (v) { return s.threshold !== null && v >= s.threshold; }).length)
    .forEach(function (c) { pick.add(c); });
  for (r = 0; r < B; r++) {
    run.held[lo + r] = g.chosen[r] === run.guess[lo + r] ? run.held[lo + r] + 1 : 0;
    run.guess[lo + r] = g.chosen[r];
  }
  var feats = features(g.probs, g.chosen, run.x.slice(P + lo, P + lo + B), run.masked.slice(lo, lo + B), twin.eos,
                       run.held.slice(lo, lo + B));
  var safe = filterScore(twin.filter, cand.map(function (c) { return feats[c]; }));
  cand.forEach(function (c, i) { if (s.filter !== null && safe[i] >= s.filter) pick.add(c); });
  var rows = Array.from(pick).sort(function (a, b) { return a - b; });
  rows = apart(rows, g.chosen, twin.eos, twin.repeatable);
  return freshRuns(rows, g.chosen, run, lo, s.no_repeat_ngram, twin.eos);
}

function answerLength(run, eos) {
  for (var a = 0; a < run.L; a++) if (!run.masked[a] && run.x[run.P + a] === eos) return a;
  return run.L;
}

function commit(twin, run, g, rows) {
  var lo = run.block * run.s.block_length;
  rows.forEach(function (r) {
    run.x[run.P + lo + r] = g.chosen[r]; run.masked[lo + r] = false; run.conf[lo + r] = g.probs[r][g.chosen[r]];
  });
  var n = answerLength(run, twin.eos), open = run.masked.slice(0, n).some(Boolean);
  run.done = (run.s.stop_at_eos && n < run.L && !open) || !run.masked.some(Boolean);
  return diffusionFrame(twin, run, rows.map(function (r) { return lo + r; }));
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

function diffusionFrame(twin, run, committed) {
  var n = run.done ? answerLength(run, twin.eos) : run.L, ids = run.x.slice(run.P, run.P + n);
  var masked = run.masked.slice(0, n);
  return {step: run.step, nfe: run.nfe, refreshes: run.refreshes, final: run.done, masked: masked,
          tokens: shownStrings(twin.tok, ids, masked.map(function (m) { return !m; }), twin.eos),
          confidence: Array.from(run.conf.slice(0, n), round4),
          committed: committed.filter(function (i) { return i < n; }).sort(function (a, b) { return a - b; }),
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

/* the diffusion twin's settings of the page that this sampler honours beyond the length: 0 turns a share off */
var OFFERED = {threshold: "share", filter: "share", min_length: "count"};

function offered(k, v) {
  if (OFFERED[k] === "count") {
    if (!Number.isInteger(v) || v < 0 || v > 256) throw new Error(k + " must be a whole number from 0 to 256.");
    return v;
  }
  if (typeof v !== "number" || !(v >= 0 && v <= 1)) throw new Error(k + " must be a number from 0 (off) to 1.");
  return v === 0 ? null : v;
}

function settingsFor(base, options) {
  var s = Object.assign({}, base);
  Object.keys(options || {}).forEach(function (k) {
    if (k === "onFrame" || k === "only" || k === "signal") return;
    if (k in OFFERED) { if (k in s) s[k] = offered(k, options[k]); return; }  // the AR twin has none of them
    if (k !== "length") throw new Error("The browser race offers the answer length, threshold, filter and " +
                                        "min_length; " + k + " is not offered.");
    var n = options.length;
    if (!Number.isInteger(n) || n < 1 || n % (s.block_length || 1)) {
      throw new Error("The answer length must be a whole number of tokens that blocks of " +
                      (s.block_length || 1) + " divide, such as 64 or 128.");
    }
    s.gen_length = n;
    if ("steps" in s) s.steps = n;  // steps follow the length when unset, as on the page
  });
  return s;
}

function promptIds(twin, prompt, length, maxLen) {
  var text = String(prompt == null ? "" : prompt);
  if (!text.trim()) throw new Error("The prompt is empty: type a prompt.");
  var ids = twin.tok.encode(text.trimEnd());  // the twins continue text: no trailing spaces (app/sources/local.py)
  if (ids.length + length > maxLen) {
    throw new Error("Prompt (" + ids.length + " tokens) plus answer length (" + length + ") exceeds the model's " +
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
  checkTwinDefaults(data.settings.diffusion);
  var tok = new Tokenizer(data.tokenizer), made = {};
  for (var kind of ["diffusion", "ar"]) {
    var session = await ort.InferenceSession.create(await source.graph(kind), {executionProviders: ["wasm"]});
    made[kind] = {net: new Net(ort, session, data.config[kind]), tok: tok, eos: data.tokenizer.eos_id,
                  mask: data.tokenizer.mask_id, vocab: data.config[kind].vocab_size,
                  repeatable: data.tokenizer.repeatable, filter: data.filter};
  }
  return {twins: made, settings: data.settings, maxLen: data.config.diffusion.max_len - 1, analysis: data.analysis};
}

function api(loaded) {
  return function race(prompt, options) {
    options = options || {};
    var ds = settingsFor(loaded.settings.diffusion, options), as = settingsFor(loaded.settings.ar, options);
    var d = loaded.twins.diffusion, a = loaded.twins.ar, onFrame = options.onFrame;
    var pd = promptIds(d, prompt, ds.gen_length, loaded.maxLen);
    var tell = function (side) { return onFrame ? function (f) { onFrame(side, f); } : null; };
    var only = options.only;  // one side races alone (the bench's per-pass times); the other is null
    if (only != null && only !== "left" && only !== "right") throw new Error("only must be left or right.");
    var signal = options.signal;  // an AbortSignal: each side stops before its next pass, keeping its frames
    return Promise.all([only === "right" ? null : diffusionRace(d, pd, ds, tell("left"), signal),
                        only === "left" ? null : arRace(a, pd.slice(), as, tell("right"), signal)])
      .then(function (both) { return {left: both[0], right: both[1], prompt_ids: pd}; });
  };
}

function checkGreedy(s) {
  if (s.temperature !== 0 || !s.stop_at_eos) throw new Error("The browser's AR sampler is greedy and stops at " +
                                                            "end-of-text only; the twin's defaults now differ.");
}

// the folder's files by default; the single file (app/site/single.js) hands over its inlined ones instead
var ready = global.ort ? load(global.ort, global.CONVERGE_SOURCE || fromFolder(global.CONVERGE_BASE || ""))
                       : Promise.reject(new Error("onnxruntime-web did not load (ort/ort.wasm.min.js)."));
var racer = ready.then(function (loaded) { checkGreedy(loaded.settings.ar); return api(loaded); });
global.converge = {
  ready: racer.then(function () { return true; }),
  /* what app/site/rows.js reads to build the player's figures: the end-of-text strings and the token units */
  analysis: ready.then(function (loaded) { return loaded.analysis; }),
  /* the diffusion twin's defaults, for the page's settings (OFFERED, and gen_length as `length`) */
  settings: ready.then(function (loaded) { return Object.assign({}, loaded.settings.diffusion); }),
  race: function (prompt, options) { return racer.then(function (race) { return race(prompt, options); }); }
};
})(typeof window !== "undefined" ? window : this);
