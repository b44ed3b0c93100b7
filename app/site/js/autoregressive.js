/* The AR twin in the browser (app/engine/autoregressive.py `generate`, `pick`; the frames of app/sources/local.py
 * `_ar_fields`), over `twin.model`: prefill(prompt) and decode(cache, token), each a promise of {cache, logits} (the
 * next token's logits), the ONNX graph in the browser (app/site/js/onnx.js), recorded logits in tests/node.
 */
import { defaultRng } from "./rng.js";
import { argmax, npSum, softmax, ranked, now, tell, stopped, pyRound4, topCandidates,
         namedCandidates } from "./sampling.js";
import { ngramBan } from "./repeats.js";
import { noRepeatLeft } from "./stutter.js";

/* one token from next-token logits: [id, its probability under the model's softmax, that softmax]; greedy at
   temperature 0, else sampled as `pick` does: the tempered distribution ordered (stable), cut to top_k, then to the
   fewest whose running sum reaches top_p, and one rng.choice among them */
export function pick(z, s, rng) {
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

/* the AR twin's race: prefill, then one cached decode a token, each frame handed to onFrame as it is made */
export async function arRace(twin, prompt, s, onFrame, signal) {
  var model = twin.model, eos = twin.eos, ids = [], conf = [], cache = null, t0 = now(), frames = [];
  var rng = defaultRng(s.seed);
  var emit = function (f) { f.t = now() - t0; frames.push(f); return tell(onFrame, f); };
  for (var i = 0; i < s.gen_length && !stopped(signal); i++) {
    var out = cache ? await model.decode(cache, ids[ids.length - 1]) : await model.prefill(prompt);
    cache = out.cache;
    var z = Float64Array.from(out.logits);
    if (i < s.min_length) z[eos] = -Infinity;
    if (s.no_repeat) noRepeatLeft(z, ids.length ? ids[ids.length - 1] : prompt[prompt.length - 1], twin);
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
