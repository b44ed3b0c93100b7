/* Start from a draft in the browser (issue 53): app/engine/draft.py (Revision's checks, choose, letters, surprisal)
 * and app/sources/revise.py (plan_for, revision_letters, header_entry) for the two twins the browser races. The
 * masked twin revises in place (app/site/js/diffusion.js), the AR twin keeps the draft up to the first re-noised
 * position and writes the rest (app/site/js/autoregressive.js); `unsure` reads the twin's doubt in the passes Python
 * spends on it, through `twin.model`, and counts them. tests/node/parity.mjs replays races from drafts.
 */
import { defaultRng } from "./rng.js";
import { argmax, npSum } from "./sampling.js";

export var WHERE = ["random", "unsure"];  // and a span, written START:END
export var KEPT = "k", EDITED = "e", RENOISED = "r", BEYOND = ".";

function countOf(n, one) { return n.toLocaleString("en-US") + " " + (n === 1 ? one : one + "s"); }

/* `parse_span`: START:END (answer tokens, END exclusive), or a sentence naming the fix */
export function parseSpan(where) {
  var parts = String(where).split(":"), head = parts[0], tail = parts.slice(1).join(":");
  var digits = function (x) { return /^\s*\d+\s*$/.test(x); };
  if (parts.length < 2 || !digits(head) || !digits(tail) || Number(head) >= Number(tail)) {
    throw new Error("Re-noise where " + JSON.stringify(String(where)).replace(/^"|"$/g, "'") + " is not random, " +
                    "unsure or START:END with START below END (answer tokens counted from 0), like 4:12.");
  }
  return [Number(head), Number(tail)];
}

/* `Revision`: what the visitor asked ({text, share 0..1, where, seed}), checked as Python checks it */
export function revisionOf(d) {
  var r = {text: String(d.text == null ? "" : d.text), share: d.share == null ? 0.3 : Number(d.share),
           where: d.where == null ? "random" : String(d.where), seed: d.seed == null ? 0 : Number(d.seed)};
  if (!r.text.trim()) throw new Error("The draft is empty: type the text to start from, or start from nothing.");
  if (!(r.share >= 0 && r.share <= 1)) {
    throw new Error("Re-noise share " + d.share + " is not between 0 and 1 (0% to 100%): pick one in that range.");
  }
  if (!Number.isInteger(r.seed) || r.seed < 0) throw new Error("The draft's seed must be a whole number of at least 0.");
  if (WHERE.indexOf(r.where) < 0) parseSpan(r.where);
  return r;
}

/* `choose`: the sorted positions of a draft of n tokens to re-noise: round(share x candidates), the highest
   surprisal first (ties to the left) for unsure, else drawn with the revision's seed */
export function choose(n, revision, uncertainty) {
  var candidates = [], lo = 0, hi = n;
  if (WHERE.indexOf(revision.where) < 0) {
    var span = parseSpan(revision.where);
    if (span[0] >= n) {
      throw new Error("Re-noise span " + revision.where + " starts past the draft's " + n + " tokens: mark a span " +
                      "that starts before " + n + ".");
    }
    lo = span[0]; hi = Math.min(span[1], n);
  }
  for (var i = lo; i < hi; i++) candidates.push(i);
  var count = nearestEven(revision.share * candidates.length), picked;
  if (count === 0) return [];
  if (revision.where === "unsure") {
    picked = candidates.slice().sort(function (a, b) { return uncertainty[b] - uncertainty[a] || a - b; })
      .slice(0, count);
  } else {
    picked = defaultRng(revision.seed).sample(candidates, count);
  }
  return picked.sort(function (a, b) { return a - b; });
}

function nearestEven(x) {  // Python's round(x) to an integer: ties to even
  var f = Math.floor(x), r = x - f;
  return r > 0.5 || (r === 0.5 && f % 2 !== 0) ? f + 1 : f;
}

/* `_surprisal`: -log p of each token under its row of logits, in float64 as numpy */
export function surprisal(rows, tokens, V) {
  return tokens.map(function (t, r) {
    var z = Float64Array.from(rows[r].subarray(0, V)), m = z[argmax(z)], e = new Float64Array(V), i;
    for (i = 0; i < V; i++) { z[i] -= m; e[i] = Math.exp(z[i]); }
    return -(z[t] - Math.log(npSum(e, 0, V)));
  });
}

/* `surprisal`: the masked twin's doubt of each draft token, seeing the prompt and the whole draft: one pass */
async function maskedDoubt(twin, prompt, draft) {
  var out = await twin.model.logits(prompt.concat(draft), null, 0, null);
  return surprisal(out.logits.slice(prompt.length, prompt.length + draft.length), draft, twin.vocab);
}

/* `causal_surprisal`: the AR twin's, reading the draft after the prompt: its prefill and a decode a further token */
async function causalDoubt(twin, prompt, draft) {
  var out = await twin.model.prefill(prompt), rows = [out.logits];
  for (var i = 0; i < draft.length - 1; i++) rows.push((await twin.model.decode(out.cache, draft[i])).logits);
  return surprisal(rows, draft, twin.vocab);
}

/* `plan_for` for a twin (`kind` diffusion revises, ar keeps a prefix), its draft as `twin.tok` encodes it: {tokens,
   renoised, mode, kept_prefix, note, nfe}, or a sentence naming the fix when the draft cannot fit */
export async function planFor(revision, source, kind, twin, prompt, genLength) {
  var ids = twin.tok.encode(revision.text), mode = kind === "ar" ? "prefix" : "revise", doubt = null;
  if (!ids.length) {
    throw new Error("The draft has no tokens for " + source + ": type some text to start from, or start from nothing.");
  }
  if (ids.length > genLength) {
    throw new Error("The draft is " + countOf(ids.length, "token") + " for " + source + " but its answer is " +
                    genLength + ": raise the answer length to " + ids.length + " or more, or shorten the draft.");
  }
  if (revision.where === "unsure") {
    doubt = await (kind === "ar" ? causalDoubt : maskedDoubt)(twin, prompt, ids);
  }
  var renoised = choose(ids.length, revision, doubt), nfe = doubt ? (kind === "ar" ? ids.length : 1) : 0;
  if (mode === "revise") return {tokens: ids, renoised: renoised, mode: mode, nfe: nfe};
  var kept = renoised.length ? renoised[0] : ids.length;
  return {tokens: ids, renoised: renoised, mode: mode, kept_prefix: kept, nfe: nfe,
          note: source + " cannot revise in place: it keeps the draft's first " + countOf(kept, "token") + ", up to " +
                "the first re-noised position, and writes the rest again."};
}

/* `revision_letters`: a frame's letters, one a token: r a draft position open now, k the draft's token, e another,
   . past the draft's end */
export function letters(plan, ids, open) {
  var out = "";
  for (var i = 0; i < ids.length; i++) {
    if (i >= plan.tokens.length) out += BEYOND;
    else if (open[i]) out += RENOISED;
    else out += ids[i] === plan.tokens[i] ? KEPT : EDITED;
  }
  return out;
}

/* `Plan.to_json`: a side's `draft` as the header keeps it, its tokens as the twin shows them */
export function planJson(plan, tok) {
  var out = {mode: plan.mode, renoised: plan.renoised.slice(), length: plan.tokens.length,
             tokens: tok.strings(plan.tokens)};
  if (plan.kept_prefix != null) out.kept_prefix = plan.kept_prefix;
  if (plan.note) out.note = plan.note;
  if (plan.nfe) out.nfe = plan.nfe;
  return out;
}
