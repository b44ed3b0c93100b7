/* What both samplers share (app/engine/sampling.py and the frames of app/sources/local.py): numpy's softmax and sums,
 * the top candidates a frame keeps, Python's roundings, the stable ranking, and how a frame reaches its watcher.
 */
import { EOS_MARK } from "./tokenizer.js";

export function row(logits, r, V) { return logits.subarray(r * V, (r + 1) * V); }

export function argmax(z) {
  var best = 0;
  for (var i = 1; i < z.length; i++) if (z[i] > z[best]) best = i;
  return best;
}

/* numpy's sum of float64s (pairwise_sum in its loops: 8 accumulators up to 128 values, halves beyond), so a sum of
   the same values has the same bits as Python's; Math.exp is not numpy's exp, which can differ in the last bit */
export function npSum(a, lo, n) {
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

export function softmax(z) {
  var m = z[argmax(z)], p = new Float64Array(z.length), i;
  for (i = 0; i < z.length; i++) p[i] = Math.exp(z[i] - m);
  var sum = npSum(p, 0, p.length);
  for (i = 0; i < z.length; i++) p[i] /= sum;
  return p;
}

export function now() { return (globalThis.performance || Date).now() / 1000; }

/* hands a frame to the watcher, then yields one task so the page can draw it (the passes themselves never yield:
   without a watcher, as in the API's plain calls, nothing waits) */
export function tell(onFrame, f) {
  if (!onFrame) return null;
  onFrame(f);
  var ch = new MessageChannel();
  return new Promise(function (done) { ch.port1.onmessage = function () { done(); }; ch.port2.postMessage(0); });
}

/* whether the caller has asked the race to stop (options.signal, an AbortSignal): checked before each pass, so a
   stopped side keeps every frame it made */
export function stopped(signal) { return !!(signal && signal.aborted); }

/* numpy's np.round(x, 4): x scaled, rounded to the nearest (the diffusion frames' confidences) */
export function round4(x) { return Math.round(x * 1e4) / 1e4; }

/* Python's round(x, 4), exact (the AR frames' confidences and every candidate's probability, as local.py) */
export function pyRound4(x) { return Number(x.toFixed(4)); }

/* the candidates in the order np.argsort(-score, kind="stable") gives them */
export function ranked(cand, score) {
  return cand.map(function (c, i) { return [c, score[i]]; })
    .sort(function (a, b) { return b[1] - a[1]; }).map(function (e) { return e[0]; });
}

/* `top_candidates`: the k likeliest (token, probability) pairs of one distribution, best first */
export function topCandidates(p, k) {
  var idx = [];
  for (var i = 0; i < p.length; i++) idx.push(i);
  return idx.sort(function (a, b) { return p[b] - p[a] || a - b; }).slice(0, k).map(function (t) { return [t, p[t]]; });
}

/* `named_candidates`: [display string, probability rounded to 4 places as Python's round], end-of-text as EOS_MARK */
export function namedCandidates(twin, cands) {
  var names = twin.tok.strings(cands.map(function (c) { return c[0]; }));
  return cands.map(function (c, i) { return [c[0] === twin.eos ? EOS_MARK : names[i], pyRound4(c[1])]; });
}

