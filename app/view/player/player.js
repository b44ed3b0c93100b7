/* Converge player: one client-side renderer for live races, loaded recordings and exported files.
 *
 * Plain browser JavaScript with no dependencies and nothing Gradio-specific, in ES modules that import what they use,
 * bundled into one script by app/view/bundle.py (app/view/payload.py asset): common.js (constants, helpers), dom.js
 * (building the DOM), timeline.js (state and timeline), panels.js (panels and heatmaps), chart.js, inspector.js and
 * this file, the entry (the player itself):
 *   var player = ConvergePlayer.create(rootElement, options);
 *   player.update(payload);                     // merge an update (live) or a whole run (replay)
 *   ConvergePlayer.mount(root, data, options);  // the same, in one call, for an exported HTML file
 * options: {presenter: bool, keyboard: bool (default true), clock: "time"|"passes", onPresenter: fn(on),
 *           onClock: fn("time"|"passes"), onPaint: fn(ms), onPick: fn() (the page's picker: a "Race / recording"
 *           button and key O in presenter mode), idle: the status line's sentence while nothing is shown (the
 *           theme's by default; the static site, which has no sources to choose nor recordings to load, says its own)}
 * A payload {notice: str} with no run says something in the status line and keeps the run shown; {figures:
 * [[label, text], ...]} with no run shows a lesson's figures of the run shown right under the panels ("This race").
 * `autoplay: true` in a new run's payload plays it from its first frame at once (a lesson's forward process);
 * `autoplay: false` keeps a live race at its end when it finishes, until Play is pressed (a race the visitor already
 * watched at the pace it ran: the browser race, app/site/js/race.js), where a finished live race of the built-in models
 * otherwise replays from its first frame at the watch pace.
 * (player.onPaint = fn(ms) may also be set later: the benchmark times each paint through it)
 *
 * Payload (the shape of app.ui.live.LiveView.update() plus `run` and `seq`):
 *   {run, seq, mode: "live"|"replay"|"message", prompt, recording, done, message, caption, origin?, warnings: [str],
 *    cursor: "start"|"end"|null, why? (a line under the metrics: why fewer passes took longer, app/view/why.py),
 *    sides: {left|right: {spec, label?, status, message, start, rows: [row...], metrics?, settled?}}}
 * `label` (compare mode: "local-diffusion · scoring=random") titles the panel instead of `spec`; `origin` says a
 * recording ran elsewhere than this server (a visitor's browser, app/trace/frames.py origin), in its own line.
 * A row is one frame analysed by app.analysis.changes.SideAnalyzer:
 *   {i, t, step, tok: [str], m: [0|1]|null, ch: [0..3], conf, cand, nfe, final, sp, pin?, note?, by?}
 * where the first row's `pin` lists the positions given before the run (pinned text, drawn in their own style
 * and shown as given in the heatmap), `note` is a line shown with that frame (the forward process's t), and `by`
 * is "user" or "model" when a learner stepped the run by hand and this frame's commits were theirs or the model's
 * or the same row compacted by app/view/payload.py wire_rows: tok holds only the tokens after the first
 * `keep` (shared with the row before), `n` is the length and `cs` the non-zero change codes as
 * [position, code, ...] pairs; confidences come as `cf` (whole percent per position) and the top
 * candidates of the positions committed or reopened at that frame as `cd`: [[position, [[token, percent]...]]...].
 * The token inspector (click or rest on a token, or the arrow keys in a focused panel) shows one position's
 * history from them; sources without confidences get a note saying so.
 * Rows are merged by index (`start` + k), so an update may repeat rows it already sent; a new `run`
 * starts over. The root and each side panel carry data-status, data-frames (frames received) and
 * data-step (the frame shown: a side's row index, the root's shared-timeline index); the root also
 * carries data-view (time|progress|passes), data-key (the timeline's value at the frame shown), data-speed, data-pace
 * (the watch pace, seconds; the export box reads it),
 * data-playing, data-presenter, data-failed (a side failed) and data-pace-factor (the share of real time a replay
 * runs at: below 1 at the watch pace); each side carries data-badge (ready, playing, paused or its status); each
 * heatmap canvas carries data-rows (one per frame) and data-bands (rows drawn: frames merged so each is at least
 * MIN_ROW pixels); the inspector carries data-open, data-side and data-pos.
 * Watch pace: a run whose every side reports forward passes (a model on this machine) replays stretched to last
 * state.pace seconds (theme.json paces, remembered in localStorage), never faster than it ran; a live race of them
 * replays so from its first frame as soon as it finishes. The clock and figures keep the real time.
 * Parts the guided lessons point at carry data-part: panel-left, panel-right, legend, heatmap-left,
 * heatmap-right, chart, metrics, scrubber, inspector (player.css .cv-spotlight outlines one).
 *
 * Replay: both sides share one timeline, the sorted times of every frame of either side, so the race
 * plays as it happened (at 1x, the recorded pace). "Compare by progress" instead puts each frame at its
 * share of its own side's run (t / that side's last t): labelled on screen as not real time. The forward-pass
 * clock (button or key F) puts each frame at the network calls that produced it (the row's nfe), for the
 * timeline, the chart and the presenter's figures; a side that reports no passes (an API) keeps its seconds.
 * Every string from a model, a prompt or a file is written with textContent, never as HTML.
 */
import { DIGIT_SPEEDS, DRIVE, ONLY_IF_SEEN, SIDES, SPEEDS, TERMINAL, displayName, el, lastRow, newSide, paceText,
  setAttr, setText, str
} from "./common.js";
import { buildDom } from "./dom.js";
import { mergeSide, timelinePart } from "./timeline.js";
import { panelsPart } from "./panels.js";
import { chartPart } from "./chart.js";
import { inspectorPart } from "./inspector.js";

// long: the player's closure: the state, nodes and parts its functions share; each function within it is held
// to the limit
function create(root, options) {
  options = options || {};
  var state = { run: null, seq: -1, mode: "live", prompt: "", recording: "", message: "", caption: "", origin: "",
                warnings: [], done: false, sides: {}, cursor: null, playing: false, speed: 1, playKey: 0,
                playLast: 0, pace: THEME.pace, autoPlayed: false, notice: "", view: options.clock === "passes" ? "passes" : "time", presenter: !!options.presenter, help: false,
                inspect: null /* {side, pos, pinned}: the position the inspector shows */ };
  SIDES.forEach(function (s) { state.sides[s] = newSide(); });
  var scheduled = false;
  var rafId = 0, timerId = 0;
  var ui = buildDom(root), views = ui.views;
  /* what the parts share: each part is a function of this context that returns the functions the others call */
  var p = { root: root, options: options, state: state, ui: ui, schedule: schedule, paint: paint };
  var timeline = p.timeline = timelinePart(p);
  var panels = panelsPart(p), charts = chartPart(p), inspector = inspectorPart(p);
  var getTimeline = timeline.getTimeline, cursorIndex = timeline.cursorIndex, seek = timeline.seek;
  var finished = timeline.finished, enabled = timeline.enabled, togglePlay = timeline.togglePlay;
  var startPlaying = timeline.startPlaying, stopPlaying = timeline.stopPlaying, rowAt = timeline.rowAt;
  var setSpeed = timeline.setSpeed, toggleClock = timeline.toggleClock, setView = timeline.setView;
  var range = ui.range, viewBox = ui.viewBox, presenterBtn = ui.presenterBtn, help = ui.help;
  var helpBtn = ui.helpBtn, helpClose = ui.helpClose, promptLine = ui.promptLine, promptText = ui.promptText;
  var captionLine = ui.captionLine, originLine = ui.originLine, statusLine = ui.statusLine, warningBox = ui.warningBox, figuresBox = ui.figuresBox, whyBox = ui.whyBox;
  var progressBanner = ui.progressBanner;

  range.addEventListener("input", function () { stopPlaying(); seek(parseInt(range.value, 10)); });
  ui.startBtn.addEventListener("click", function () { stopPlaying(); seek(0); });
  ui.prevBtn.addEventListener("click", function () { stopPlaying(); seek(cursorIndex() - 1); });
  ui.nextBtn.addEventListener("click", function () { stopPlaying(); seek(cursorIndex() + 1); });
  ui.endBtn.addEventListener("click", function () { stopPlaying(); seek(getTimeline().length - 1); });
  ui.playBtn.addEventListener("click", togglePlay);
  ui.speedSel.addEventListener("change", function () { setSpeed(parseFloat(ui.speedSel.value)); });
  ui.paceSel.addEventListener("change", function () { timeline.setPace(parseFloat(ui.paceSel.value)); });
  if (options.onPick) {
    ui.pickBtn.hidden = false;
    ui.pickBtn.addEventListener("click", function () { ui.pickBtn.blur(); options.onPick(); });
  } else {  /* no picker on this page (the static site, an export): the help does not offer key O */
    Array.prototype.forEach.call(help.querySelectorAll("[data-key=O]"), function (n) { n.hidden = true; });
  }
  viewBox.addEventListener("change", function () { setView(viewBox.checked ? "progress" : "time"); });
  ui.clockBtn.addEventListener("click", toggleClock);
  /* the button lets go of the focus, so the next Space plays instead of pressing it again */
  presenterBtn.addEventListener("click", function () { setPresenter(!state.presenter); presenterBtn.blur(); });
  helpBtn.addEventListener("click", function () { setHelp(!state.help); });
  helpClose.addEventListener("click", function () { setHelp(false); helpBtn.focus(); });
  if (typeof ResizeObserver !== "undefined") {
    new ResizeObserver(function () { charts.resize(); schedule(); }).observe(ui.chart);
    var heatResized = new ResizeObserver(function () {
      SIDES.forEach(function (s) { views[s].heatSize = null; });
      schedule();
    });
    SIDES.forEach(function (s) { heatResized.observe(views[s].heat); });
  }

  function onKey(e) {
    if (!root.isConnected) { document.removeEventListener("keydown", onKey); return; }
    if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
    var t = e.target || {};
    var tag = t.tagName;
    if (state.presenter && t !== root && root.contains(t) && DRIVE[e.key] && !(t === ui.playBtn && e.key === " ") &&
        !(t.classList && (t.classList.contains("cv-text") || t.classList.contains("cv-insp-pos"))) &&
        !(t.closest && t.closest("[data-own-keys]"))) {
      /* in presenter mode Space and the arrows always drive the player (a clicker sends them to whatever has the
         focus): a control of the player lets go of the focus instead of taking the key */
      t.blur();
      t = {};
      tag = undefined;
    }
    if (t.isContentEditable || tag === "TEXTAREA" || tag === "SELECT" ||
        (tag === "INPUT" && t !== range && t !== viewBox)) return;
    var k = e.key;
    if (k === "?") { setHelp(!state.help); e.preventDefault(); return; }
    if (k === "Escape") {
      if (state.help) { setHelp(false); e.preventDefault(); }
      else if (state.inspect) { inspector.close(); e.preventDefault(); }
      else if (state.presenter) { setPresenter(false); e.preventDefault(); }
      return;
    }
    if ((tag === "BUTTON" || t === viewBox) && (k === " " || k === "Enter")) return; /* its own click */
    if (t === range && (k === "ArrowLeft" || k === "ArrowRight" || k === "Home" || k === "End")) return;
    if (k === "p" || k === "P") { setPresenter(!state.presenter); e.preventDefault(); return; }
    if (k === "f" || k === "F") { toggleClock(); e.preventDefault(); return; }
    if ((k === "o" || k === "O") && options.onPick && state.presenter) { options.onPick(); e.preventDefault(); return; }
    if (!enabled()) return;
    if (k === " ") togglePlay();
    else if (k === "ArrowLeft") { stopPlaying(); seek(cursorIndex() - 1); }
    else if (k === "ArrowRight") { stopPlaying(); seek(cursorIndex() + 1); }
    else if (k === "Home") { stopPlaying(); seek(0); }
    else if (k === "End") { stopPlaying(); seek(getTimeline().length - 1); }
    else if (DIGIT_SPEEDS[k]) setSpeed(DIGIT_SPEEDS[k]);
    else if (k === "-" || k === "_") setSpeed(SPEEDS[Math.max(0, SPEEDS.indexOf(state.speed) - 1)]);
    else if (k === "+" || k === "=") setSpeed(SPEEDS[Math.min(SPEEDS.length - 1, SPEEDS.indexOf(state.speed) + 1)]);
    else if (k === "c" || k === "C") setView(state.view === "time" ? "progress" : "time");
    else return;
    e.preventDefault();
  }
  if (options.keyboard !== false) document.addEventListener("keydown", onKey);

  function setPresenter(on) {
    state.presenter = !!on;
    root.classList.toggle("cv-presenter", state.presenter);
    presenterBtn.setAttribute("aria-pressed", state.presenter ? "true" : "false");
    charts.resize();
    if (options.onPresenter) options.onPresenter(state.presenter);
    schedule();
  }

  function setHelp(on) {
    state.help = !!on;
    help.hidden = !state.help;
    helpBtn.setAttribute("aria-expanded", state.help ? "true" : "false");
    root.setAttribute("data-help", state.help ? "open" : "closed");
    if (state.help) helpClose.focus();
  }

  function paintLegend() {
    /* only what occurs in the run shown (all of it while nothing is loaded) */
    var seen = { unchanged: 1, inspected: 1 }, any = false; /* only_if_seen entries stay hidden until seen */
    SIDES.forEach(function (s) {
      var side = state.sides[s];
      if (!side.rows.length) return;
      any = true;
      for (var name in side.seen) if (side.seen[name]) seen[name] = 1;
      if (side.pinned) { seen.pinned = 1; seen.given = 1; }
    });
    ui.legendItems.forEach(function (item) {
      var name = item.getAttribute("data-style") || item.getAttribute("data-heat");
      var hide = (any || ONLY_IF_SEEN[name]) && !seen[name];
      if (item.hidden !== hide) item.hidden = hide;
    });
  }

  function reset() {
    stopPlaying();
    state.seq = -1; state.prompt = ""; state.recording = ""; state.message = ""; state.done = false;
    state.caption = ""; state.origin = ""; state.warnings = []; state.autoPlayed = false; state.notice = ""; state.figures = []; state.why = "";
    state.cursor = null;
    state.inspect = null;
    SIDES.forEach(function (s) {
      state.sides[s] = newSide();
      views[s].shown = [];
      views[s].shownText = [];
      views[s].shownPre = [];
      views[s].tail = "";
      views[s].lastLen = 0;
    });
    timeline.invalidate();
  }

  function update(payload) {
    if (!payload || typeof payload !== "object") return;
    if (payload.notice != null && payload.run == null) {
      /* a word about the page (an empty prompt) that keeps the run shown */
      state.notice = str(payload.notice);
      schedule();
      return;
    }
    if (payload.figures != null && payload.run == null) {
      /* a lesson's figures, measured on the race shown: [[label, text], ...] (app/lessons/figures.py) */
      state.figures = Array.isArray(payload.figures) ? payload.figures : [];
      schedule();
      return;
    }
    var fresh = payload.run !== state.run;
    state.notice = "";
    var wasDone = finished();
    if (fresh) { reset(); state.run = payload.run; state.holdEnd = payload.autoplay === false; }
    if (typeof payload.seq === "number") state.seq = payload.seq;
    if (payload.mode) state.mode = str(payload.mode);
    if (payload.prompt != null) state.prompt = str(payload.prompt);
    if (payload.recording != null) state.recording = str(payload.recording);
    if (payload.caption != null) state.caption = str(payload.caption);
    if (payload.origin != null) state.origin = str(payload.origin);
    if (payload.warnings) state.warnings = payload.warnings.map(str);
    if (payload.why != null) state.why = str(payload.why);
    if ("message" in payload) state.message = str(payload.message);
    if (payload.done) state.done = true;
    var sides = payload.sides || {};
    SIDES.forEach(function (s) { if (sides[s]) mergeSide(state.sides[s], sides[s]); });
    if (state.done) SIDES.forEach(function (s) {
      var side = state.sides[s];
      if (!TERMINAL[side.status] && side.status !== "idle") side.status = side.rows.length ? "done" : side.status;
    });
    timeline.invalidate();
    if (fresh && payload.cursor === "start" && getTimeline().length) state.cursor = 0;
    if (fresh && payload.autoplay && getTimeline().length > 1) { state.cursor = 0; startPlaying(); } /* a lesson's */
    /* a race of the built-in models that has just finished replays at the watch pace, from its first frame */
    if (!wasDone && state.mode === "live" && finished() && !state.autoPlayed && !state.holdEnd &&
        timeline.watchable() && getTimeline().length > 1) {
      state.autoPlayed = true;
      state.cursor = 0;
      startPlaying();
    }
    schedule();
  }

  function schedule() {
    if (scheduled) return;
    scheduled = true;
    var run = function () {
      if (!scheduled) return;
      scheduled = false;
      if (rafId) cancelAnimationFrame(rafId);
      if (timerId) clearTimeout(timerId);
      rafId = timerId = 0;
      paint();
    };
    rafId = requestAnimationFrame(run);
    timerId = setTimeout(run, 120); /* paints even where animation frames are paused (a hidden tab) */
  }

  function paint() {
    var started = performance.now();
    var done = finished();
    var tl = getTimeline();
    var scrubbing = done && state.cursor != null && tl.length > 0;
    var K = scrubbing ? tl[cursorIndex()] : null;
    measureSides();
    var sum = paintSides(K, done, scrubbing);
    var overall = state.run == null || state.mode === "message" ? "idle" : !done ? "running"
      : sum.anyStopped ? "stopped" : sum.anyError && !sum.anyDone ? "error" : "done";
    setAttr(root, "data-status", overall);
    setAttr(root, "data-frames", String(sum.total));
    setAttr(root, "data-step", String(tl.length ? cursorIndex() : -1));
    setAttr(root, "data-run", str(state.run));
    setAttr(root, "data-mode", state.mode);
    setAttr(root, "data-view", state.view);
    setAttr(root, "data-key", K == null ? "" : String(K));
    setAttr(root, "data-speed", String(state.speed));
    setAttr(root, "data-pace", String(state.pace));
    setAttr(root, "data-playing", state.playing ? "true" : "false");
    setAttr(root, "data-presenter", state.presenter ? "true" : "false");
    setText(promptText, state.prompt);
    promptLine.hidden = !state.prompt;
    setText(captionLine, state.caption);
    captionLine.hidden = !state.caption;
    setText(originLine, state.origin);
    originLine.hidden = !state.origin;
    paintLegend();
    progressBanner.hidden = state.view !== "progress";
    timeline.paintClock();
    setAttr(root, "data-failed", sum.failed.length ? "true" : "false");
    setText(statusLine, statusText(overall, sum, tl));
    paintNotes();
    timeline.paintScrub(done, tl);
    charts.paint(K);
    if (!state.presenter) panels.paintMetrics();
    SIDES.forEach(function (s) { panels.follow(views[s]); });
    inspector.paint();
    var hook = options.onPaint || (api && api.onPaint);
    if (hook) hook(performance.now() - started);
  }

  /* read before any write, while layout is still clean from the last frame */
  function measureSides() {
    SIDES.forEach(function (s) {
      var v = views[s], t = v.text;
      v.atEnd = t.scrollTop + t.clientHeight >= t.scrollHeight - 4;
      if (!v.heatSize) v.heatSize = [v.heat.clientWidth, v.heat.clientHeight];
    });
  }

  /* each side's panel at time K (null: its last frame); what the status line needs to know of the sides */
  function paintSides(K, done, scrubbing) {
    var sum = { total: 0, anyRunning: false, anyStopped: false, anyError: false, anyDone: false, failed: [] };
    SIDES.forEach(function (s) {
      var side = state.sides[s];
      var idx = K == null ? lastRow(side) : rowAt(side, K);
      panels.paintSide(s, side, idx, done, scrubbing, K);
      sum.total += side.rows.length;
      if (side.status === "running" || side.status === "waiting") sum.anyRunning = true;
      if (side.status === "stopped") sum.anyStopped = true;
      if (side.status === "error") { sum.anyError = true; sum.failed.push(displayName(side, s)); }
      if (side.status === "done") sum.anyDone = true;
    });
    return sum;
  }

  /* the status line: the run's message, else theme.json's sentence for its state, with a notice before it */
  function statusText(overall, sum, tl) {
    var status = state.message;
    if (!status) {
      /* the words are theme.json's sentences; the video export's line is app/view/side.py status_sentence */
      var say = THEME.sentences;
      if (overall === "idle") status = options.idle || say.idle;
      else if (overall === "running") status = sum.anyRunning ? say.racing : say.finishing;
      else if (overall === "stopped") status = say.stopped;
      else if (overall === "error") status = say.failed;
      else if (sum.anyError) status = say.partly_failed.replace("{side}", sum.failed.join(" and "));
      else status = state.mode === "replay" ? say.loaded : say.finished;
      if (state.recording && overall !== "idle" && !(overall === "error" && !sum.total)) {
        status += (overall === "running" ? " Recording to " : state.mode === "replay" ? " \u2014 " : " Saved as ") +
          state.recording + ".";
      }
      if (state.mode === "replay" && overall !== "idle" && tl.length && !state.playing && cursorIndex() === 0) {
        status += " Press Play (or Space) to start.";
      }
      if (state.playing && state.autoPlayed && timeline.paceFactor() < 1) {
        status += " Replaying at the watch pace (" + paceText(state.pace) + "); the clock shows real time.";
      }
    }
    return state.notice ? state.notice + " " + status : status;
  }

  /* the warnings, a lesson's figures and the why line, each hidden when empty */
  function paintNotes() {
    var warnings = state.warnings.join(" ");
    setText(warningBox, warnings ? "Warning: " + warnings : "");
    warningBox.hidden = !warnings;
    var figures = (state.figures || []).map(function (f) { return str(f[0]) + ": " + str(f[1]); }).join(" \u00b7 ");
    setText(figuresBox, figures ? "This race \u2014 " + figures : "");
    figuresBox.hidden = !figures;
    setText(whyBox, state.why || "");
    whyBox.hidden = !state.why;
  }

  var api = null;
  if (state.presenter) setPresenter(true);
  paint();
  api = { update: update, reset: function () { state.run = null; reset(); schedule(); }, root: root,
              state: state, paint: paint, play: startPlaying, pause: stopPlaying, seek: seek,
              setSpeed: setSpeed, setView: setView, setPace: timeline.setPace, setPresenter: setPresenter, speeds: SPEEDS.slice() };
  root.convergePlayer = api; /* for tests, the page's Stop (it pauses a replay) and the browser console */
  return api;
}

function mount(root, data, options) {
  var player = create(root, options);
  player.update(data);
  return player;
}

global.ConvergePlayer = { create: create, mount: mount, version: 2, el: el };  // el: for the presenter picker
