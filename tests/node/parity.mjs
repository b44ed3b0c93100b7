/* Replays the golden vectors tests/test_site_parity.py writes (twins.json, cases.json, logits.f32 in the folder given)
 * through the browser's samplers (app/site/js/, imported as the ES modules they are), with no ONNX and no browser:
 * each twin's model hands back the logits the Python twin's network gave at that call, after checking the call asks
 * for what Python's asked (the same sequence, start and stop). Each frame must equal Python's as it comes, and the
 * player's wire rows, metrics and settled series built here must equal app/view's. Exits 1 naming the first race,
 * side and pass (or frame) that differs; else prints how many races and passes it replayed.
 *   node tests/node/parity.mjs FOLDER [CASE ...]
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { twinsOf, api } from "../../app/site/js/twins.js";
import { analyzer, wire, summary, draftEntry } from "../../app/site/js/rows.js";

const folder = process.argv[2], only = process.argv.slice(3).map(Number);
const data = JSON.parse(readFileSync(join(folder, "twins.json"), "utf8"));
const cases = JSON.parse(readFileSync(join(folder, "cases.json"), "utf8"));
const bytes = readFileSync(join(folder, "logits.f32"));
const logits = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
const V = data.config.diffusion.vocab_size;

class Differs extends Error {}

function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

/* a model that replays one side's recorded calls in order, failing at the first call that asks for something else */
function replaying(where, calls) {
  let at = 0;
  const next = (op, ids, more) => {
    const call = calls[at++], asked = {op, ids, ...more}, want = {op: call && call.op, ids: call && call.ids};
    Object.keys(more).forEach((k) => { want[k] = call && call[k]; });
    if (!call || !same(asked, want)) {
      throw new Differs(`${where}, pass ${at}: JavaScript asked the network for ${JSON.stringify(asked)}, ` +
                        `Python for ${JSON.stringify(call ? want : "nothing more")}`);
    }
    const rows = [];
    for (let r = 0; r < call.rows; r++) rows.push(logits.subarray(call.offset + r * V, call.offset + (r + 1) * V));
    return rows;
  };
  return {
    passes: () => at,
    refresh: async (view, start) => ({cache: "refreshed", logits: next("refresh", view, {start, stop: null})}),
    logits: async (view, cache, start, stop) => ({
      cache, logits: next("logits", view, {start, stop, cached: cache !== null})}),
    prefill: async (prompt) => ({cache: "prefilled", logits: next("prefill", prompt, {})[0]}),
    decode: async (cache, token) => ({cache, logits: next("decode", [token], {})[0]}),
  };
}

/* a frame's fields as a recording keeps them (Frame.to_json: unset ones left out), probabilities to 4 places */
const FIELDS = ["step", "nfe", "refreshes", "final", "tokens", "masked", "confidence", "committed", "remasked",
                "candidates", "text", "usage", "revision"];
function kept(frame) {
  const out = {};
  for (const k of FIELDS) {
    const v = frame[k];
    if (v !== null && v !== undefined && !(Array.isArray(v) && v.length === 0)) out[k] = v;
  }
  return out;
}

function compareFrames(where, got, want, from = 0) {
  for (let i = 0; i < Math.max(got.length, want.length); i++) {
    const a = got[i] && kept(got[i]), b = want[i] && kept(want[i]);
    if (!same(a, b)) {
      const key = a && b ? FIELDS.find((k) => !same(a[k], b[k])) : "frame";
      throw new Differs(`${where}, pass ${(a || b).nfe} (frame ${from + i}): ${key} is ${JSON.stringify(a && a[key])} ` +
                        `here, ${JSON.stringify(b && b[key])} in Python`);
    }
  }
}

function compareRows(where, frames, want) {
  frames.forEach((f, i) => { f.t = want.frames[i].t; });  // Python's clock, so the times agree
  const a = analyzer(data.analysis), made = {rows: wire(frames.map((f) => a.add(f))), ...summary(frames, data.analysis)};
  for (const part of ["rows", "metrics", "settled"]) {
    if (!same(made[part], want[part])) {
      const i = Array.isArray(made[part]) ? made[part].findIndex((r, k) => !same(r, want[part][k])) : -1;
      throw new Differs(`${where}: the player's ${part} differ${i >= 0 ? " at row " + i : ""}: ` +
                        `${JSON.stringify(i >= 0 ? made[part][i] : made[part])} here, ` +
                        `${JSON.stringify(i >= 0 ? want[part][i] : want[part])} in Python`);
    }
  }
}

async function replayCase(n, c) {
  const models = {diffusion: replaying(`race ${n}, left side`, c.left.calls),
                  ar: replaying(`race ${n}, right side`, c.right.calls)};
  const seen = {left: 0, right: 0};  // each frame checked as it comes, so the first pass that differs is named
  const onFrame = (key, f) => {
    compareFrames(`race ${n}, ${key} side`, [f], [c[key].frames[seen[key]]], seen[key]++);
  };
  const r = await api(twinsOf(data, models))(c.prompt, {...c.options, onFrame});
  for (const [key, kind] of [["left", "diffusion"], ["right", "ar"]]) {
    const where = `race ${n}, ${key} side`;
    if (models[kind].passes() !== c[key].calls.length) {
      throw new Differs(`${where}, pass ${models[kind].passes() + 1}: JavaScript stopped after ` +
                        `${models[kind].passes()} passes, Python made ${c[key].calls.length}`);
    }
    compareFrames(where, r[key].frames, c[key].frames);
    const plan = r[key].draft || null, entry = draftEntry(plan);  // a race from a draft: the side's plan, its line
    if (!same(plan, c[key].draft) || !same(entry, c[key].entry)) {
      throw new Differs(`${where}: its plan is ${JSON.stringify([plan, entry])} here, ` +
                        `${JSON.stringify([c[key].draft, c[key].entry])} in Python`);
    }
    compareRows(where, r[key].frames, c[key]);
  }
  return c.left.calls.length + c.right.calls.length;
}

let passes = 0, races = 0;
try {
  for (let n = 0; n < cases.length; n++) {
    if (only.length && !only.includes(n)) continue;
    passes += await replayCase(n, cases[n]);
    races += 1;
  }
} catch (e) {
  console.log(e instanceof Differs ? e.message : e.stack);
  process.exit(1);
}
console.log(`replayed ${races} races, ${passes} passes, every frame and row equal`);
process.exit(0);  // the frames' hand-offs (MessageChannel, as in the browser) hold no work, only open ports
