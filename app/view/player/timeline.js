/* Converge player: the state a payload merges into, and the timeline (time, progress or forward passes)
   with its playback and scrubber. */
import { CODE_STYLE, PACE_KEY, PASS_RATE, SIDES, TERMINAL, displayName, hasPasses, lastRow, pinFlags, rateText,
  setAttr, setText, str
} from "./common.js";

function expand(w, prev) {
  /* A row of our own from a compact row (app/view/payload.py wire_rows) or a plain analyzer row.
     Nothing from the payload is kept by reference: the host may reuse its objects for later updates. */
  var tok, ch;
  if ("keep" in w) {
    if (w.keep && !prev) return null;
    tok = w.keep ? prev.tok.slice(0, w.keep).concat(w.tok) : w.tok.slice();
    ch = new Uint8Array(w.n);
    var cs = w.cs || [];
    for (var k = 0; k + 1 < cs.length; k += 2) ch[cs[k]] = cs[k + 1];
  } else {
    tok = w.tok.slice();
    ch = Uint8Array.from(w.ch || []);
  }
  /* confidences and candidates in whole percent: wire rows carry them so, analyzer rows as probabilities */
  var cf = w.cf ? percents(w.cf, 1) : w.conf ? percents(w.conf, 100) : null;
  if (w.cf && w.cfk) {  /* the first cfk confidences are the row before's (typing sends one a token) */
    if (!prev || !prev.cf) return null;
    var whole = new Uint8Array(w.cfk + cf.length);
    whole.set(prev.cf.subarray(0, w.cfk));
    whole.set(cf, w.cfk);
    cf = whole;
  }
  var cd = w.cd ? candidates(w.cd, 1) : w.cand ? candidates(w.cand, 100) : null;
  return { i: w.i, t: w.t, step: w.step, tok: tok, m: w.m ? w.m.slice() : null, ch: ch,
           nfe: w.nfe == null ? null : w.nfe, final: !!w.final, sp: w.sp || 0, vis: null, cf: cf, cd: cd,
           note: w.note == null ? "" : str(w.note),
           by: w.by === "user" || w.by === "model" ? w.by : null,
           st: typeof w.st === "string" && w.st.length === tok.length ? w.st : null, dl: deletions(w.dl || w["del"]),
           rv: typeof w.rv === "string" && w.rv.length === tok.length ? w.rv : null,
           en: entropies(w.en || w.ent, tok.length) };
}

function entropies(list, n) {
  /* a row's entropy (nats) a position, null where the model predicted nothing; none unless one a token */
  if (!Array.isArray(list) || list.length !== n) return null;
  return list.map(function (e) { return typeof e === "number" && isFinite(e) && e >= 0 ? e : null; });
}

function deletions(list) {
  /* a schema 2 row's deleted tokens: [[previous position, position it stands before, token], ...] */
  if (!Array.isArray(list) || !list.length) return null;
  return list.filter(Array.isArray).map(function (d) { return [d[0] | 0, d[1] | 0, str(d[2])]; });
}

function percent(v, scale) { return Math.max(0, Math.min(100, Math.round(+v * scale) || 0)); }

function percents(list, scale) {
  var out = new Uint8Array(list.length);
  for (var k = 0; k < list.length; k++) out[k] = percent(list[k], scale);
  return out;
}

function candidates(list, scale) {
  /* [[position, [[token, percent], ...]], ...]; anything malformed is left out */
  var out = [];
  for (var k = 0; k < list.length; k++) {
    var e = list[k];
    if (!Array.isArray(e) || !Array.isArray(e[1])) continue;
    out.push([e[0] | 0, e[1].filter(Array.isArray).slice(0, 3).map(function (c) {
      return [str(c[0]), percent(c[1], scale)];
    })]);
  }
  return out;
}

export function mergeSide(side, entry) {
  if (entry.spec != null) side.spec = str(entry.spec);
  if (entry.label != null) side.label = str(entry.label);
  if (entry.status) {
    if (!(TERMINAL[side.status] && !TERMINAL[entry.status])) side.status = str(entry.status);
  }
  if ("message" in entry) side.message = str(entry.message);
  var rows = entry.rows || [];
  var start = typeof entry.start === "number" ? entry.start : side.rows.length;
  if (start > side.rows.length) side.gaps += 1;
  if (side.live.length > start) side.live.length = start;
  for (var k = 0; k < rows.length; k++) {
    var row = rows[k] && rows[k].tok ? expand(rows[k], side.rows[start + k - 1]) : null;
    if (!row) { side.gaps += 1; continue; }
    side.rows[start + k] = row;
    /* the first row lists the positions given before the run (app/view/side.py pinned_positions) */
    if (start + k === 0) side.pinned = Array.isArray(rows[k].pin) && rows[k].pin.length ? pinFlags(rows[k].pin) : null;
    if (row.tok.length > side.maxLen) side.maxLen = row.tok.length;
    noteSeen(side.seen, row);
    if (start + k < side.heatRows) side.heatRows = side.heatDrawn = start + k;
  }
  if (entry.draft) side.draft = draftOf(entry.draft);
  if (entry.metrics) side.metrics = JSON.parse(JSON.stringify(entry.metrics));
  if (entry.settled && entry.settled.length) {
    side.settled = entry.settled.map(function (p) { return [p[0], p[1]]; });
  }
}

function draftOf(d) {
  /* a side's draft as the payload sends it (app/view/side.py draft_entry), copied: its mode, the panel's line, its
     tokens and the positions it re-noised */
  return { mode: str(d.mode), line: str(d.line), tokens: Array.isArray(d.tokens) ? d.tokens.map(str) : [],
           renoised: pinFlags(Array.isArray(d.renoised) ? d.renoised : []) };
}

function noteSeen(seen, row) {
  /* what a row shows, for the legend: masked positions, draft text, new / changed / remasked cells (the heatmap's
     fresh, changed, remasked) */
  var n = row.tok.length, ch = row.ch, m = row.m;
  if (m) for (var k = 0; k < m.length; k++) if (m[k]) { seen.masked = 1; break; }
  for (var j = 0; j < ch.length; j++) {
    var c = ch[j];
    if (CODE_STYLE[c]) seen[CODE_STYLE[c]] = 1;
    else if (!m && !row.final && j >= row.sp && j < n) seen.draft = 1;
  }
  /* schema 2: noise and drafts by state; a row that inserts or deletes aligns the heatmap's columns */
  if (row.st) {
    seen.st2 = 1;
    if (row.st.indexOf("n") >= 0) seen.noise = 1;
    if (row.st.indexOf("d") >= 0) seen.draft = seen.drafted = 1;
  }
  if (row.dl) seen.deleted = 1;
  /* a side that started from a draft: its revision letters (app/analysis/revision.py) */
  if (row.rv) {
    if (row.rv.indexOf("k") >= 0) seen.kept = 1;
    if (row.rv.indexOf("e") >= 0) seen.revised = 1;
    if (row.rv.indexOf("r") >= 0) seen.reopened = 1;
  }
  /* only a schema 2 token row moves columns; a text state that shrank keeps a column a display token */
  if ((row.dl && row.st) || seen.inserted) seen.aligned = 1;
}

// long: the part's closure: the state its functions share (p: the player's state, nodes and other parts); each
// function within it is held to the limit
export function timelinePart(p) {
  var state = p.state, options = p.options, ui = p.ui, schedule = p.schedule, paint = p.paint;
  var playBtn = ui.playBtn, speedSel = ui.speedSel, viewBox = ui.viewBox, clockBtn = ui.clockBtn;
  var passesBanner = ui.passesBanner, scrub = ui.scrub, range = ui.range, rangeLabel = ui.rangeLabel;
  var timeOut = ui.timeOut;
  var controls = [ui.startBtn, ui.prevBtn, playBtn, ui.nextBtn, ui.endBtn, range, speedSel, viewBox];
  /* the watch pace (theme.json paces, seconds a replay of the built-in models lasts; 0: real time), as this browser
     last chose it */
  try {
    var stored = global.localStorage && global.localStorage.getItem(PACE_KEY);
    if (stored != null && THEME.paces.indexOf(+stored) >= 0) state.pace = +stored;
  } catch (e) { /* storage off (a sandboxed file): the default */ }
  ui.paceSel.value = String(state.pace);
  var timeline = null; /* the sorted keys of every frame of either side; null until asked for again */

  function invalidate() { timeline = null; }

  function finished() {
    if (state.run == null) return false;
    return state.done || SIDES.every(function (s) {
      var st = state.sides[s].status;
      return TERMINAL[st] || st === "idle";
    });
  }

  function enabled() { return finished() && getTimeline().length > 0; }

  function onPasses(side) { return state.view === "passes" && hasPasses(side); }

  function keyOf(side, row) {
    if (state.view === "passes") return row.nfe != null ? row.nfe : hasPasses(side) ? 0 : row.t;
    if (state.view !== "progress") return row.t;
    return side.end > 0 ? row.t / side.end : 1;
  }

  function getTimeline() {
    if (timeline) return timeline;
    var ks = [];
    SIDES.forEach(function (s) {
      var side = state.sides[s], last = lastRow(side);
      side.end = last >= 0 ? side.rows[last].t : 0;
      side.rows.forEach(function (r) { if (r) ks.push(keyOf(side, r)); });
    });
    ks.sort(function (a, b) { return a - b; });
    var out = [];
    for (var i = 0; i < ks.length; i++) if (!out.length || ks[i] !== out[out.length - 1]) out.push(ks[i]);
    timeline = out;
    return out;
  }

  function cursorIndex() {
    var tl = getTimeline();
    return state.cursor == null ? tl.length - 1 : Math.min(state.cursor, tl.length - 1);
  }

  function seek(i) {
    var tl = getTimeline();
    if (!finished() || !tl.length) return;
    state.cursor = Math.max(0, Math.min(tl.length - 1, i));
    schedule();
  }

  function togglePlay() { if (state.playing) stopPlaying(); else startPlaying(); }

  function startPlaying() {
    var tl = getTimeline();
    if (!finished() || !tl.length) return;
    if (cursorIndex() >= tl.length - 1) state.cursor = 0;
    state.playing = true;
    state.playKey = tl[cursorIndex()];
    state.playLast = performance.now();
    playBtn.textContent = "\u275A\u275A Pause";
    playBtn.setAttribute("aria-label", "Pause");
    playBtn.setAttribute("title", "Pause");
    requestAnimationFrame(tick);
    schedule();
  }

  function stopPlaying() {
    if (!state.playing) return;
    state.playing = false;
    playBtn.textContent = "\u25B6 Play";
    playBtn.setAttribute("aria-label", "Play");
    playBtn.setAttribute("title", "Play");
    schedule();
  }

  function watchable() {
    /* whether the watch pace applies: every side that has frames ran a model here (it reports forward passes);
       an API side (no passes) keeps its real timing, and the forward-pass clock has its own rate */
    if (state.view === "passes" || !(state.pace > 0)) return false;
    var any = false;
    for (var k = 0; k < SIDES.length; k++) {
      var side = state.sides[SIDES[k]];
      if (lastRow(side) < 0) continue;
      if (!hasPasses(side)) return false;
      any = true;
    }
    return any;
  }

  function longest() { getTimeline(); return Math.max(state.sides.left.end, state.sides.right.end); }

  function paceFactor() {
    /* the share of real time a replay runs at (1: real time): a run of the built-in models is stretched to last
       the watch pace (never sped up), so a race over in half a second can be followed; the clock keeps real time */
    var end = longest();
    return watchable() && end > 0 && end < state.pace ? end / state.pace : 1;
  }

  function keyRate() {
    /* timeline units per second of playback: seconds of race time, or (progress view) the share of the
       longer side's run, so 1x lasts as long as the slower side did; both at the watch pace */
    if (state.view === "passes") return state.speed * PASS_RATE;
    var end = longest(), f = paceFactor();
    if (state.view !== "progress") return state.speed * f;
    return end > 0 ? state.speed * f / end : state.speed;
  }

  function setPace(v) {
    v = +v;
    if (!(v >= 0)) return;
    state.pace = v;
    if (ui.paceSel.value !== String(v)) ui.paceSel.value = String(v);
    try { global.localStorage.setItem(PACE_KEY, String(v)); } catch (e) { /* storage off: the pace lasts this page */ }
    schedule();
  }

  function tick(now) {
    if (!state.playing) return;
    var tl = getTimeline();
    state.playKey += Math.max(0, now - state.playLast) / 1000 * keyRate();
    state.playLast = now;
    var i = cursorIndex();
    while (i + 1 < tl.length && tl[i + 1] <= state.playKey) i++;
    state.cursor = i;
    if (i >= tl.length - 1) stopPlaying();
    paint();
    if (state.playing) requestAnimationFrame(tick);
  }

  function rowAt(side, key) {
    /* The last frame of a side at or before `key` on the timeline (-1 before its first frame). */
    var rows = side.rows, lo = 0, hi = rows.length - 1, best = -1;
    while (lo <= hi) {
      var mid = (lo + hi) >> 1;
      var r = rows[mid];
      if (r && keyOf(side, r) <= key) { best = mid; lo = mid + 1; } else if (r) { hi = mid - 1; } else { lo = mid + 1; }
    }
    while (best >= 0 && !rows[best]) best--;
    return best;
  }

  function setSpeed(v) {
    if (!(v > 0)) return;
    state.speed = v;
    speedSel.value = String(v);
    schedule();
  }

  function toggleClock() { setView(state.view === "passes" ? "time" : "passes"); }

  function setView(view) {
    if (view === state.view) return;
    var clockWas = state.view === "passes";
    var i = state.cursor == null ? null : cursorIndex();
    var tl = getTimeline();
    /* keep the shown moment: find, in the new timeline, the position that shows the same left/right frames */
    var shown = i == null ? null : SIDES.map(function (s) { return rowAt(state.sides[s], tl[i]); });
    state.view = view;
    viewBox.checked = view === "progress";
    timeline = null;
    if (shown) {
      var ntl = getTimeline(), best = 0;
      for (var j = 0; j < ntl.length; j++) {
        var ok = SIDES.every(function (s, n) { return rowAt(state.sides[s], ntl[j]) <= shown[n]; });
        if (ok) best = j; else break;
      }
      state.cursor = best;
    }
    if (state.playing) state.playKey = getTimeline()[cursorIndex()] || 0;
    if ((view === "passes") !== clockWas && options.onClock) options.onClock(view === "passes" ? "passes" : "time");
    schedule();
  }

  function paintClock() {
    /* the forward-pass clock's button and banner: what the axis counts, and which side keeps its seconds */
    var on = state.view === "passes";
    setText(clockBtn, on ? "Clock: forward passes" : "Clock: seconds");
    setAttr(clockBtn, "aria-pressed", on ? "true" : "false");
    passesBanner.hidden = !on;
    if (!on) return;
    var text = "Forward-pass clock: each frame is placed at the number of network calls that produced it " +
      "(counts, not seconds); playback runs " + PASS_RATE + " passes a second at 1\u00D7.";
    SIDES.forEach(function (s) {
      var side = state.sides[s];
      if (lastRow(side) >= 0 && !hasPasses(side)) {
        text += " " + displayName(side, s) + " reports no forward passes (an API does not say how many it ran): " +
          "it stays on its own clock, in seconds.";
      }
    });
    setText(passesBanner, text);
  }

  function paintScrub(done, tl) {
    var on = done && tl.length > 0;
    controls.forEach(function (n) {
      if (n.disabled === on) n.disabled = !on;
    });
    setAttr(scrub, "data-enabled", on ? "true" : "false");
    var max = String(Math.max(0, tl.length - 1));
    if (range.max !== max) range.max = max;
    var i = tl.length ? cursorIndex() : 0;
    if (range.value !== String(i)) range.value = String(i);
    setText(rangeLabel, state.view === "progress" ? "Progress" : state.view === "passes" ? "Passes" : "Time");
    var where = !tl.length ? "" : !on ? "live \u2014 the timeline opens when the run ends"
      : state.view === "passes" ? "pass " + tl[i] + " (" + (i + 1) + " / " + tl.length + ")"
      : state.view === "progress" ? "progress " + (tl[i] * 100).toFixed(1) + " % (" + (i + 1) + " / " + tl.length + ") \u2014 not real time"
      : "t = " + tl[i].toFixed(3) + " s (" + (i + 1) + " / " + tl.length + ")";
    var f = on && state.view !== "passes" ? paceFactor() : 1;
    if (f < 1) where += " \u00B7 watch pace: " + rateText(f * state.speed) + " real time";
    setAttr(p.root, "data-pace-factor", f < 1 ? f.toPrecision(6) : "1");  // six significant digits: small factors stay exact enough to check
    setText(timeOut, where);
    setAttr(range, "aria-valuetext", where || "no frames yet");
  }

  return { invalidate: invalidate, finished: finished, enabled: enabled, onPasses: onPasses,
           getTimeline: getTimeline, cursorIndex: cursorIndex, seek: seek, togglePlay: togglePlay,
           startPlaying: startPlaying, stopPlaying: stopPlaying, rowAt: rowAt, setSpeed: setSpeed,
           toggleClock: toggleClock, setView: setView, paintClock: paintClock, paintScrub: paintScrub,
           setPace: setPace, watchable: watchable, paceFactor: paceFactor };
}
