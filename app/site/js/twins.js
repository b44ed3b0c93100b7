/* The race API over twins.json and one model per twin: `twinsOf` makes the twins the samplers read (tokenizer, ids,
 * the filter's weights) over the models given (the ONNX graphs in the browser, app/site/js/onnx.js; recorded
 * logits in tests/node/parity.mjs), `api` the race(prompt, options) that checks the settings and races both sides.
 */
import { Tokenizer } from "./tokenizer.js";
import { settingsFor, checkFixed, diffusionGiven, promptIds } from "./options.js";
import { diffusionRace } from "./diffusion.js";
import { arRace } from "./autoregressive.js";
import { revisionOf, planFor, planJson } from "./draft.js";

/* what race(...) reads: the twins over `models` ({diffusion, ar}), both twins' defaults and declarations, the
   longest prompt and answer, the analysis constants app/site/js/rows.js reads and the board's (board.js) */
export function twinsOf(data, models) {
  ["diffusion", "ar"].forEach(function (kind) { checkFixed(kind, data.settings[kind], data.declared[kind]); });
  var tok = new Tokenizer(data.tokenizer), made = {};
  ["diffusion", "ar"].forEach(function (kind) {
    made[kind] = {model: models[kind], tok: tok, eos: data.tokenizer.eos_id, mask: data.tokenizer.mask_id,
                  vocab: data.config[kind].vocab_size, repeatable: data.tokenizer.repeatable, filter: data.filter,
                  topCandidates: data.top_candidates};
  });
  return {twins: made, settings: data.settings, declared: data.declared, maxLen: data.config.diffusion.max_len - 1,
          analysis: data.analysis, board: data.board};
}

var SOURCES = {diffusion: "local-diffusion", ar: "local-ar"};  // the names Python's sources give the twins

/* each racing side's plan for the `draft` option ({text, share, where, seed}: app/site/js/draft.js), made before
   either races, as the race asks every source's `revise` first; null without a draft or for a side not racing */
function plans(loaded, draft, prompt, lengths, only) {
  if (draft == null) return Promise.resolve({diffusion: null, ar: null});
  var revision = revisionOf(draft), out = {};
  var one = function (kind, side) {
    if (only != null && only !== side) return Promise.resolve(null);
    return planFor(revision, SOURCES[kind], kind, loaded.twins[kind], prompt, lengths[kind]);
  };
  return one("diffusion", "left").then(function (p) { out.diffusion = p; return one("ar", "right"); })
    .then(function (p) { out.ar = p; out.revision = revision; return out; });
}

/* a side's result with its plan as the header keeps it (`draft`, Plan.to_json) */
function planned(result, plan, twin) {
  if (result && plan) result.draft = planJson(plan, twin.tok);
  return result;
}

/* `options`: the diffusion twin's settings by name, the AR twin's under `ar`, both answers' `length`, `onFrame`,
   `only` (one side races alone: the bench's per-pass times; the other is null) and `draft` (start from it: each
   side's plan comes back as its `draft`, the revision asked as the race's, and goes to `onPlans` before the race) */
export function api(loaded) {
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
    return plans(loaded, options.draft, pd, {diffusion: ds.gen_length, ar: as.gen_length}, only).then(function (p) {
      if (options.onPlans && p.revision) {  // each side's plan before its first frame: the panel's line, the inspector
        options.onPlans({left: p.diffusion && planJson(p.diffusion, d.tok), right: p.ar && planJson(p.ar, a.tok)});
      }
      return Promise.all([only === "right" ? null : diffusionRace(d, pd, ds, tell("left"), signal, p.diffusion),
                          only === "left" ? null : arRace(a, pd.slice(), as, tell("right"), signal, p.ar)])
        .then(function (both) {
          return {left: planned(both[0], p.diffusion, d), right: planned(both[1], p.ar, a), prompt_ids: pd,
                  draft: p.revision || null};
        });
    });
  };
}

/* each twin's offered settings, as the page builds its controls: {kind: {defaults, declared}} */
export function controls(loaded) {
  var out = {};
  ["diffusion", "ar"].forEach(function (kind) {
    out[kind] = {defaults: Object.assign({}, loaded.settings[kind]), declared: loaded.declared[kind]};
  });
  return out;
}
