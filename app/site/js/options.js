/* The settings in the browser: each read and checked against its Python declaration (twins.json `declared`, written
 * for app/sources/local.py BROWSER_SETTINGS), as app/engine/options.py `coerce` and `check` and the samplers'
 * `validate` do; anything else (pins) refused by name in one sentence. And the prompt's ids, as the sources make them.
 */
export var TWIN_NAMES = {diffusion: "diffusion twin", ar: "AR twin"};
// the API's own options, none of them a twin's setting
export var OWN_OPTIONS = ["onFrame", "onPlans", "only", "signal", "length", "ar", "draft"];
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
export function settingsFor(kind, base, decl, given, length) {
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
export function checkFixed(kind, base, decl) {
  Object.keys(FIXED[kind]).forEach(function (k) {
    if (!(k in decl) && JSON.stringify(base[k]) !== JSON.stringify(FIXED[kind][k])) {
      throw new Error("The browser's " + TWIN_NAMES[kind] + " runs " + k + " = " + JSON.stringify(FIXED[kind][k]) +
                      " only; the twin's defaults now say " + JSON.stringify(base[k]) + ".");
    }
  });
}

/* the diffusion twin's given settings (the options' own keys aside) */
export function diffusionGiven(options) {
  var out = {};
  Object.keys(options).forEach(function (k) { if (OWN_OPTIONS.indexOf(k) < 0) out[k] = options[k]; });
  return out;
}

export function promptIds(twin, prompt, length, maxLen) {
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

