/* The AR twin in the browser (app/engine/autoregressive.py `generate`, `pick`; the frames of app/sources/local.py
 * `_ar_fields`), over `twin.model`: prefill(prompt) and decode(cache, token), each a promise of {cache, logits} (the
 * next token's logits), the ONNX graph in the browser (app/site/js/onnx.js), recorded logits in tests/node.
 */
import { defaultRng } from "./rng.js";
import { argmax, npSum, softmax, ranked, now, tell, stopped, pyRound4, topCandidates,
         namedCandidates } from "./sampling.js";
import { ngramBan } from "./repeats.js";
import { noRepeatLeft } from "./stutter.js";
import { letters } from "./draft.js";

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

/* the AR twin's race: prefill, then one cached decode a token, each frame handed to onFrame as it is made; with a
   prefix `plan` (app/site/js/draft.js) a first frame shows the draft's kept head, and the twin writes the rest after
   it as `_ar_prefix_frames` does: the head read as the prompt's continuation, each frame the head then what it wrote */
export async function arRace(twin, prompt, s, onFrame, signal, plan) {
  var head = plan ? plan.tokens.slice(0, plan.kept_prefix || 0) : [], t0 = now(), frames = [], given = s;
  var ahead = plan ? plan.nfe : 0, emit = function (f) {
    if (plan) f.revision = letters(plan, f.ids, f.ids.map(function () { return false; })) || null;
    delete f.ids;
    f.t = now() - t0; frames.push(f);
    return tell(onFrame, f);
  };
  if (plan) {
    var full = head.length >= s.gen_length;
    await emit(arFrame(twin, 0, ahead, full, head, head.map(function () { return 1.0; }), null, prompt.length));
    if (full) return arEnd(twin, frames, head, given);
    s = Object.assign({}, s, {gen_length: s.gen_length - head.length, min_length: Math.max(0, s.min_length -
                                                                                              head.length)});
  }
  var whole = await arSteps(twin, prompt.concat(head), s, signal, function (i, last, ids, conf, cands) {
    return emit(arFrame(twin, head.length + i + 1, ahead + i + 1, last, head.concat(ids),
                        head.map(function () { return 1.0; }).concat(conf), cands, prompt.length));
  });
  return arEnd(twin, frames, head.concat(whole.ids), given);
}

/* `_ar_display` of one step (position `step - 1` committed unless it stopped at end-of-text), with its ids for the
   revision letters (dropped before it is handed on) */
function arFrame(twin, step, nfe, last, ids, conf, cands, promptLen) {
  var stop = step > 0 && ids.length !== step;
  return {step: step, nfe: nfe, final: last, tokens: twin.tok.strings(ids), confidence: conf.map(pyRound4),
          committed: step > 0 && !stop ? [step - 1] : null, text: last ? twin.tok.decode(ids) : null,
          candidates: cands ? [[step - 1, namedCandidates(twin, topCandidates(cands, twin.topCandidates))]] : null,
          usage: last ? {prompt_tokens: promptLen, completion_tokens: ids.length} : null, ids: ids};
}

function arEnd(twin, frames, ids, s) {
  return {frames: frames, text: twin.tok.decode(ids), ids: ids, nfe: frames.length ? frames[frames.length - 1].nfe : 0,
          stopped: !(frames.length && frames[frames.length - 1].final), settings: s};
}

/* `generate`'s loop: prefill, then a cached decode a token; `step(i, last, ids, confidences, probs or null)` after
   each token (probs null where it stopped at end-of-text) */
async function arSteps(twin, prompt, s, signal, step) {
  var model = twin.model, eos = twin.eos, ids = [], conf = [], cache = null;
  var rng = defaultRng(s.seed);
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
    await step(i, last, ids.slice(), conf.slice(), stop ? null : got[2]);
    if (last) break;
  }
  return {ids: ids};
}
