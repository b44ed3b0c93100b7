/* The learned commit filter (app/engine/commit_filter.py): each candidate's features and the one-hidden-layer
 * network's score, in float32 as numpy computes them.
 */
import { npSum } from "./sampling.js";

/* ---- the learned commit filter: its features and its one-hidden-layer network, in float32 as numpy ---- */

export function features(probs, chosen, ids, masked, eos, held) {
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

export function filterScore(w, feats) {
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

