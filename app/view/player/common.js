/* Converge player: the constants and small helpers every part uses (ES modules bundled by app/view/bundle.py). */
export var SIDES = ["left", "right"];
/* colours, legend, status words, sentences, the mask glyph and token styles: app/view/theme.json, as THEME */
export var MASK = THEME.mask;
export var TERMINAL = {};
THEME.terminal.forEach(function (s) { TERMINAL[s] = 1; });
var EOS = { "<|endoftext|>": 1, "<|eos|>": 1, "<|eot_id|>": 1, "<|im_end|>": 1, "<|end|>": 1, "</s>": 1,
            "<eos>": 1, "[EOS]": 1 };
export var STATUS_TEXT = THEME.status;
export var SPEEDS = [0.1, 0.25, 0.5, 1, 1.5, 2, 3, 4];
/* a digit key sets the speed it names (1 is 1x), as a speaker expects; the slower speeds are a - away */
export var DIGIT_SPEEDS = { "1": 1, "2": 2, "3": 3, "4": 4 };
export var PACE_KEY = "converge-pace"; /* localStorage: the watch pace this browser chose */
export var PASS_RATE = THEME.pass_rate; /* forward passes per second of playback at 1x, on the forward-pass clock */
export var BLOCK = 16; /* token positions per block of a text panel (see paintTokens) */
export var DRIVE = { " ": 1, ArrowLeft: 1, ArrowRight: 1, Home: 1, End: 1 }; /* presenter keys no control may take */
export var HOVER_MS = 600; /* how long the pointer rests on a token before the inspector shows it */
export var MAX_EVENTS = 24; /* events the inspector lists for one position (a long Mercury draft can have more) */
export var SPARK = [360, 64]; /* the inspector's sparkline, CSS pixels: its size */
export var SPARK_PAD = [30, 6]; /* and its left and right padding */
export var HEAT = {}; /* heatmap cells as [r, g, b] */
for (var name in THEME.heat) HEAT[name] = hexRgb(THEME.heat[name]);
export var LINE = { left: { color: themeColour("left", false), dark: themeColour("left", true), dash: [] },
             right: { color: themeColour("right", false), dark: themeColour("right", true), dash: [7, 4] } };
export var METRICS = [
  ["ttft", "Time to first visible token", seconds],
  ["t_final", "Time to final", seconds],
  ["frames", "Frames", count],
  ["answer_tokens", "Answer length", count],
  ["time_per_token", "Time per token", millis],
  ["nfe", "Forward passes (every call of the network)", count],
  ["refreshes", "of which cache refreshes (block starts)", count],
  ["tokens_per_s", "Tokens / s", fixed1],
  ["tokens_per_nfe", "Tokens per forward pass", fixed2],
  /* a side that started from a draft (issue 53), from its last frame's letters; the rows show only when one did */
  ["draft_kept", "Kept from the draft (tokens)", count],
  ["draft_edited", "Edited from the draft (tokens)", count]
];
export var DRAFT_METRICS = { draft_kept: 1, draft_edited: 1 };
export var KEYS = [
  ["Space", "play / pause"],
  ["\u2190  \u2192", "one frame back / forward"],
  ["Home  End", "jump to the start / the end"],
  ["1  2  3  4", "speed 1\u00D7, 2\u00D7, 3\u00D7, 4\u00D7"],
  ["\u2212  +", "slower / faster (" + SPEEDS.map(speedText).join(", ") + ")"],
  ["C", "compare by progress (not real time) on / off"],
  ["F", "forward-pass clock on / off (time is the default)"],
  ["P", "presenter mode on / off"],
  ["O", "presenter mode on the page: run a race or load a recording"],
  ["?", "show / hide this help"],
  ["Tab, then \u2190 \u2192", "in a text panel: inspect the previous / next position (Shift: 10 at a time)"],
  ["Esc", "close this help, or the token inspector, or leave presenter mode"]
];

function hexRgb(hex) {
  return [parseInt(hex.slice(1, 3), 16), parseInt(hex.slice(3, 5), 16), parseInt(hex.slice(5, 7), 16)];
}

/* a theme colour for canvas drawing, which cannot read the CSS custom properties' light-dark() pairs */
export function themeColour(name, dark) {
  var v = THEME.colors[name];
  return typeof v === "string" ? v : v[dark ? 1 : 0];
}

function seconds(v) { return v == null ? "\u2014" : v.toFixed(v < 10 ? 3 : 2) + " s"; }
function millis(v) { return v == null ? "\u2014" : (v * 1000).toFixed(v < 0.01 ? 2 : 1) + " ms"; }
function count(v) { return v == null ? "\u2014" : String(v); }
function fixed1(v) { return v == null ? "\u2014" : v.toFixed(1); }
function fixed2(v) { return v == null ? "\u2014" : v.toFixed(2); }
export function speedText(v) { return String(v) + "\u00D7"; }
export function rateText(v) { return (v >= 0.1 ? v.toFixed(2) : v.toPrecision(2)).replace(/\.?0+$/, "") + "\u00D7"; }
export function paceText(v) { return v > 0 ? v + " s" : "real time"; }

export function el(tag, cls, text, attrs) {
  var node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text != null) node.textContent = text;
  if (attrs) for (var k in attrs) node.setAttribute(k, attrs[k]);
  return node;
}

export function gridStyle(ctx, px, dark) {
  /* the chart's and the sparkline's axis lines and labels; the caller adds the lines, then strokes */
  ctx.font = px + "px system-ui, sans-serif";
  ctx.fillStyle = themeColour("axis-text", dark);
  ctx.strokeStyle = themeColour("axis-line", dark);
  ctx.lineWidth = 1;
  ctx.setLineDash([]);
  ctx.beginPath();
}

export function str(v) { return v == null ? "" : String(v); }

/* a count and its noun, singular for exactly one ("1 token", "2 tokens"); `many` when the plural is not one + "s"
   (app/errors.py `counted` is the Python one). A unit the metrics name (a plural phrase, "tokenizer pieces (...)")
   gets its singular from UNIT_ONE. Why: a count of one once read "1 tokens". */
export function counted(n, one, many) {
  return String(n) + " " + (n === 1 ? one : many || one + "s");
}

var UNIT_ONE = { "tokenizer pieces": "tokenizer piece", "words and symbols shown": "word or symbol shown" };

/* an answer length in its metrics unit (app/analysis/changes.py TOKEN_UNITS): "1 tokenizer piece", "9 tokenizer
   pieces (...)" */
export function unitCount(n, unit) {
  var head = str(unit).split(" (")[0], rest = str(unit).slice(head.length);
  return counted(n, (UNIT_ONE[head] || head) + rest, head + rest);
}

/* a side's title: the payload's label (compare mode names the differing settings), else its source */
export function displayName(side, s) { return side.label || side.spec || sideWord(s); }

export function sideWord(s) { return s === "left" ? "Left" : "Right"; }

/* a token as the inspector quotes it: spaces, newlines and tabs made visible */
export function quoted(tok) {
  return "\u201C" + tok.replace(/ /g, "\u2423").replace(/\n/g, "\u23CE").replace(/\t/g, "\u21E5") + "\u201D";
}

export function setText(node, text) {
  if (node.textContent !== text) node.textContent = text;
}

export function setAttr(node, name, value) {
  if (node.getAttribute(name) !== value) node.setAttribute(name, value);
}

function rgba(c) { return (255 << 24 | c[2] << 16 | c[1] << 8 | c[0]) >>> 0; }
export var HEAT32 = {};
for (var key in HEAT) HEAT32[key] = rgba(HEAT[key]);
/* merging frames into one heatmap row: a change within the band wins over the band's last state */
export var HEAT_RANK = {};
HEAT_RANK[HEAT32["new"]] = 1; HEAT_RANK[HEAT32.remasked] = 2; HEAT_RANK[HEAT32.changed] = 3;
HEAT_RANK[HEAT32.inserted] = 1; HEAT_RANK[HEAT32.renoised] = 2; HEAT_RANK[HEAT32.edited] = 3;
HEAT_RANK[HEAT32.deleted] = 3;
export var MIN_ROW = 3; /* CSS pixels: the least height a heatmap row is drawn at (more frames are merged) */

/* a token's class by style = masked | change code << 1 | draft << 4 | inspected << 5 | pinned << 6 | noise << 7 |
   revision << 8 (pinned, text given before the run, wins over the rest but the inspection outline; codes 4-6 are
   schema 2's edited, re-noised and inserted: app/analysis/states.py; revision, on a side that started from a draft:
   1 kept from the draft, 2 edited from it, 3 re-noised and still open, as app/view/side.py cell_style rules) */
export var STYLES = THEME.styles;
/* the change codes by name (app/analysis/states.py CODE_NAMES, sent as THEME.codes): CODE.new is 1 */
export var CODE = {};
THEME.codes.forEach(function (name, i) { CODE[name] = i; });
/* each code's style and heat colour, named as the code is; unchanged has none */
export var CODE_STYLE = THEME.codes.map(function (name, i) { return i === CODE.unchanged ? null : name; });
export var DRAFT = 16;
export var SEL = 32;
export var PINNED = 64;
export var NOISE = 128;
export var REV = 256;
export var REV_STYLE = [null, "kept", "revised", "reopened"];
export var TOKEN_CLASS = [];
for (var style = 0; style < 1024; style++) {
  var c = style >> 1 & 7, cls = "cv-tok";
  if (style & PINNED) cls += " " + STYLES.pinned["class"];
  else {
    if (style & 1) cls += " " + STYLES.masked["class"];
    if (style & NOISE) cls += " " + STYLES.noise["class"];
    if (CODE_STYLE[c]) cls += " " + STYLES[CODE_STYLE[c]]["class"];
    else if (style & DRAFT) cls += " " + STYLES.draft["class"];
    if (REV_STYLE[style >> 8]) cls += " " + STYLES[REV_STYLE[style >> 8]]["class"];
  }
  if (style & SEL) cls += " " + STYLES.inspected["class"];
  TOKEN_CLASS.push(cls);
}
export var DELETED_CLASS = "cv-tok " + STYLES.deleted["class"]; /* a token this frame dropped, drawn where it was */
export var ONLY_IF_SEEN = {}; /* legend entries shown only once what they name occurs (pins, the schema 2 states) */
THEME.only_if_seen.forEach(function (name) { ONLY_IF_SEEN[name] = 1; });
export var STATE_WORDS = { n: STYLES.noise.label, d: STYLES.draft.label, a: "accepted" }; /* the inspector's */
export var REV_WORDS = { k: STYLES.kept.label, e: STYLES.revised.label, r: STYLES.reopened.label };
export var CODE_HEAT = CODE_STYLE;

/* a side's pinned positions as flags by position, from the positions its first row lists */
export function pinFlags(positions) {
  var flags = [];
  for (var k = 0; k < positions.length; k++) flags[positions[k] | 0] = 1;
  return flags;
}

export function cellColour(code, masked, pinned, state, letter) {
  if (pinned) return HEAT32.given;
  if (CODE_HEAT[code]) return HEAT32[CODE_HEAT[code]];
  if (masked) return HEAT32.masked;
  return state === "n" ? HEAT32.noise : state === "d" ? HEAT32.drafted : letter === "e" ? HEAT32.revised
    : HEAT32.unchanged;
}

/* a quiet cell's revision bits (REV_STYLE) from its letter on a side that started from a draft: a re-noised position
   still open over its mask or noise, else kept or edited from the draft unless masked, noise or a draft */
export function revBits(letter, code, open) {
  if (!letter || code) return 0;
  if (letter === "r") return 3 * REV;
  if (open) return 0;
  return letter === "k" ? REV : letter === "e" ? 2 * REV : 0;
}

/* the positions of the row before that a schema 2 row's positions continue (-1: inserted), from its inserted
   codes and deleted list; any other row continues position by position (app/analysis/states.py
   previous_positions) */
function backOf(row, before) {
  var n = row.tok.length, out = [], i;
  if (!row.st) { for (i = 0; i < n; i++) out.push(i < before ? i : -1); return out; }
  var dropped = {}, j = 0;
  (row.dl || []).forEach(function (d) { dropped[d[0]] = 1; });
  for (i = 0; i < n; i++) {
    if (row.ch[i] === CODE.inserted) { out.push(-1); continue; }
    while (j < before && dropped[j]) j++;
    out.push(j < before ? j++ : -1);
  }
  return out;
}

/* each row's heatmap column per position and the columns its deletions leave, so a position keeps its column
   across insertions and deletions (app/analysis/states.py columns: the same rule) */
export function lineColumns(rows) {
  var next = [], head = -1, lines = [], count = 0, perRow = [], gone = [];
  for (var r = 0; r < rows.length; r++) {
    var row = rows[r];
    if (!row) { perRow.push(null); gone.push(null); continue; }
    var back = backOf(row, lines.length), mine = [];
    for (var i = 0; i < row.tok.length; i++) {
      var j = back[i];
      if (j >= 0 && j < lines.length) { mine.push(lines[j]); continue; }
      var line = count++, after = mine.length ? mine[mine.length - 1] : -1;
      if (after < 0) { next[line] = head; head = line; }
      else { next[line] = next[after] == null ? -1 : next[after]; next[after] = line; }
      mine.push(line);
    }
    var prev = lines;
    gone.push((row.dl || []).map(function (d) { return prev[d[0]]; }).filter(function (x) { return x != null; }));
    lines = mine;
    perRow.push(mine);
  }
  var order = [], at = head, k = 0;
  while (at >= 0) { order[at] = k++; at = next[at]; }
  function place(list) { return list && list.map(function (x) { return order[x]; }); }
  return { cols: perRow.map(place), gone: gone.map(place), width: count };
}

export function newSide() {
  return { spec: "", label: "", status: "idle", message: "", rows: [], gaps: 0, metrics: null, settled: null,
           maxLen: 0, seen: {}, heat: null, heatW: 0, heatRows: 0, heatDrawn: 0, live: [], end: 0, pinned: null,
           draft: null };
}

export function legendItem(cls, sample, label) {
  var item = el("span", "cv-legend-item");
  item.appendChild(el("span", "cv-tok " + cls, sample, { "aria-hidden": "true" }));
  item.appendChild(el("span", "cv-legend-label", label));
  return item;
}

export function visibleCount(row) {
  if (row.vis != null) return row.vis;
  var n = 0;
  for (var k = 0; k < row.tok.length; k++) {
    var tk = row.tok[k];
    if (!(row.m && row.m[k]) && !(row.st && row.st[k] === "n") && tk.trim() && !EOS[tk]) n++;
  }
  row.vis = n;
  return n;
}

export function button(cls, text, label, extra) {
  var attrs = { type: "button", "aria-label": label, title: label };
  if (extra) for (var k in extra) attrs[k] = extra[k];
  return el("button", cls, text, attrs);
}

/* the last row a side holds (-1: none); rows may have gaps while live updates arrive out of order */
export function lastRow(side) {
  for (var i = side.rows.length - 1; i >= 0; i--) if (side.rows[i]) return i;
  return -1;
}

/* whether the side reports forward passes (local and Hugging Face models do; API sources do not) */
export function hasPasses(side) {
  var last = lastRow(side);
  return last >= 0 && side.rows[last].nfe != null;
}

/* dark colours: inside Gradio's .dark, with data-theme="dark", or (cv-auto-theme) when the system prefers dark */
export function isDark(root) {
  return !!(root.closest && root.closest(".dark")) || root.getAttribute("data-theme") === "dark" ||
    (root.classList.contains("cv-auto-theme") && global.matchMedia &&
     global.matchMedia("(prefers-color-scheme: dark)").matches);
}
