/* Converge player: one client-side renderer for live races, loaded recordings and exported files.
 *
 * Plain browser JavaScript with no dependencies and nothing Gradio-specific:
 *   var player = ConvergePlayer.create(rootElement, options);
 *   player.update(payload);                     // merge an update (live) or a whole run (replay)
 *   ConvergePlayer.mount(root, data, options);  // the same, in one call, for an exported HTML file
 * options: {presenter: bool, keyboard: bool (default true), clock: "time"|"passes", onPresenter: fn(on),
 *           onClock: fn("time"|"passes"), onPaint: fn(ms)}
 * (player.onPaint = fn(ms) may also be set later: the benchmark times each paint through it)
 *
 * Payload (the shape of app.race.Race.snapshot() plus `run` and `seq`):
 *   {run, seq, mode: "live"|"replay"|"message", prompt, recording, done, message, caption, warnings: [str],
 *    cursor: "start"|"end"|null,
 *    sides: {left|right: {spec, label?, status, message, start, rows: [row...], metrics?, settled?}}}
 * `label` (compare mode: "local-diffusion · scoring=random") titles the panel instead of `spec`.
 * A row is one frame analysed by app.analysis.SideAnalyzer:
 *   {i, t, step, tok: [str], m: [0|1]|null, ch: [0..3], conf, cand, nfe, final, sp}
 * or the same row compacted by app/view/payload.py wire_rows: tok holds only the tokens after the first
 * `keep` (shared with the row before), `n` is the length and `cs` the non-zero change codes as
 * [position, code, ...] pairs; confidences come as `cf` (whole percent per position) and the top
 * candidates of the positions committed or reopened at that frame as `cd`: [[position, [[token, percent]...]]...].
 * The token inspector (click or rest on a token, or the arrow keys in a focused panel) shows one position's
 * history from them; sources without confidences get a note saying so.
 * Rows are merged by index (`start` + k), so an update may repeat rows it already sent; a new `run`
 * starts over. The root and each side panel carry data-status, data-frames (frames received) and
 * data-step (the frame shown: a side's row index, the root's shared-timeline index); the root also
 * carries data-view (time|progress|passes), data-key (the timeline's value at the frame shown), data-speed,
 * data-playing and data-presenter; each heatmap
 * canvas carries data-rows (one per frame); the inspector carries data-open, data-side and data-pos.
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
(function (global) {
  "use strict";

  var SIDES = ["left", "right"];
  /* colours, legend, status words, the mask glyph and token styles: app/view/theme.json, set before this script */
  var THEME = global.ConvergeTheme;
  var MASK = THEME.mask;
  var TERMINAL = {};
  THEME.terminal.forEach(function (s) { TERMINAL[s] = 1; });
  var EOS = { "<|endoftext|>": 1, "<|eos|>": 1, "<|eot_id|>": 1, "<|im_end|>": 1, "<|end|>": 1, "</s>": 1,
              "<eos>": 1, "[EOS]": 1 };
  var STATUS_TEXT = THEME.status;
  var SPEEDS = [0.1, 0.25, 0.5, 1, 1.5, 2, 3, 4];
  var PASS_RATE = 10; /* forward passes per second of playback at 1x, on the forward-pass clock */
  var BLOCK = 16; /* token positions per block of a text panel (see paintTokens) */
  var HOVER_MS = 600; /* how long the pointer rests on a token before the inspector shows it */
  var MAX_EVENTS = 24; /* events the inspector lists for one position (a long Mercury draft can have more) */
  var SPARK = [360, 64], SPARK_PAD = [30, 6]; /* the inspector's sparkline, CSS pixels: size, left/right padding */
  var HEAT = {}; /* heatmap cells as [r, g, b] */
  for (var name in THEME.heat) HEAT[name] = hexRgb(THEME.heat[name]);
  var LINE = { left: { color: themeColour("left", false), dark: themeColour("left", true), dash: [] },
               right: { color: themeColour("right", false), dark: themeColour("right", true), dash: [7, 4] } };
  var METRICS = [
    ["ttft", "Time to first visible token", seconds],
    ["t_final", "Time to final", seconds],
    ["frames", "Frames", count],
    ["answer_tokens", "Answer length", count],
    ["time_per_token", "Time per token", millis],
    ["nfe", "Forward passes (every call of the network)", count],
    ["refreshes", "of which cache refreshes (block starts)", count],
    ["tokens_per_s", "Tokens / s", fixed1],
    ["tokens_per_nfe", "Tokens per forward pass", fixed2]
  ];
  var KEYS = [
    ["Space", "play / pause"],
    ["\u2190  \u2192", "one frame back / forward"],
    ["Home  End", "jump to the start / the end"],
    ["1 \u2026 8", "speed " + SPEEDS.map(speedText).join(", ")],
    ["\u2212  +", "slower / faster"],
    ["C", "compare by progress (not real time) on / off"],
    ["F", "forward-pass clock on / off (time is the default)"],
    ["P", "presenter mode on / off"],
    ["?", "show / hide this help"],
    ["Tab, then \u2190 \u2192", "in a text panel: inspect the previous / next position (Shift: 10 at a time)"],
    ["Esc", "close this help, or the token inspector"]
  ];

  function hexRgb(hex) {
    return [parseInt(hex.slice(1, 3), 16), parseInt(hex.slice(3, 5), 16), parseInt(hex.slice(5, 7), 16)];
  }

  /* a theme colour for canvas drawing, which cannot read the CSS custom properties' light-dark() pairs */
  function themeColour(name, dark) {
    var v = THEME.colors[name];
    return typeof v === "string" ? v : v[dark ? 1 : 0];
  }

  function seconds(v) { return v == null ? "\u2014" : v.toFixed(v < 10 ? 3 : 2) + " s"; }
  function millis(v) { return v == null ? "\u2014" : (v * 1000).toFixed(v < 0.01 ? 2 : 1) + " ms"; }
  function count(v) { return v == null ? "\u2014" : String(v); }
  function fixed1(v) { return v == null ? "\u2014" : v.toFixed(1); }
  function fixed2(v) { return v == null ? "\u2014" : v.toFixed(2); }
  function speedText(v) { return String(v) + "\u00D7"; }

  function el(tag, cls, text, attrs) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text != null) node.textContent = text;
    if (attrs) for (var k in attrs) node.setAttribute(k, attrs[k]);
    return node;
  }

  function gridStyle(ctx, px, dark) {
    /* the chart's and the sparkline's axis lines and labels; the caller adds the lines, then strokes */
    ctx.font = px + "px system-ui, sans-serif";
    ctx.fillStyle = themeColour("axis-text", dark);
    ctx.strokeStyle = themeColour("axis-line", dark);
    ctx.lineWidth = 1;
    ctx.setLineDash([]);
    ctx.beginPath();
  }

  function str(v) { return v == null ? "" : String(v); }

  /* a side's title: the payload's label (compare mode names the differing settings), else its source */
  function displayName(side, s) { return side.label || side.spec || sideWord(s); }

  function sideWord(s) { return s === "left" ? "Left" : "Right"; }

  /* a token as the inspector quotes it: spaces, newlines and tabs made visible */
  function quoted(tok) {
    return "\u201C" + tok.replace(/ /g, "\u2423").replace(/\n/g, "\u23CE").replace(/\t/g, "\u21E5") + "\u201D";
  }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function setAttr(node, name, value) {
    if (node.getAttribute(name) !== value) node.setAttribute(name, value);
  }

  function rgba(c) { return (255 << 24 | c[2] << 16 | c[1] << 8 | c[0]) >>> 0; }
  var HEAT32 = {};
  for (var key in HEAT) HEAT32[key] = rgba(HEAT[key]);

  /* a token's class by style = masked | change code << 1 | draft << 3 | inspected << 4 */
  var STYLES = THEME.styles, CODE_STYLE = [null, "new", "changed", "remasked"];
  var TOKEN_CLASS = [];
  for (var style = 0; style < 32; style++) {
    var c = style >> 1 & 3, cls = "cv-tok";
    if (style & 1) cls += " " + STYLES.masked["class"];
    if (c) cls += " " + STYLES[CODE_STYLE[c]]["class"];
    else if (style & 8) cls += " " + STYLES.draft["class"];
    if (style & 16) cls += " " + STYLES.inspected["class"];
    TOKEN_CLASS.push(cls);
  }

  function cellColour(code, masked) {
    if (code === 1) return HEAT32.fresh;
    if (code === 2) return HEAT32.changed;
    if (code === 3) return HEAT32.remasked;
    return masked ? HEAT32.masked : HEAT32.unchanged;
  }

  function newSide() {
    return { spec: "", label: "", status: "idle", message: "", rows: [], gaps: 0, metrics: null, settled: null,
             maxLen: 0, heat: null, heatW: 0, heatRows: 0, heatDrawn: 0, live: [], end: 0 };
  }

  function legendItem(cls, sample, label) {
    var item = el("span", "cv-legend-item");
    item.appendChild(el("span", "cv-tok " + cls, sample, { "aria-hidden": "true" }));
    item.appendChild(el("span", "cv-legend-label", label));
    return item;
  }

  function visibleCount(row) {
    if (row.vis != null) return row.vis;
    var n = 0;
    for (var k = 0; k < row.tok.length; k++) {
      var tk = row.tok[k];
      if (!(row.m && row.m[k]) && tk.trim() && !EOS[tk]) n++;
    }
    row.vis = n;
    return n;
  }

  function button(cls, text, label, extra) {
    var attrs = { type: "button", "aria-label": label, title: label };
    if (extra) for (var k in extra) attrs[k] = extra[k];
    return el("button", cls, text, attrs);
  }

  function create(root, options) {
    options = options || {};
    var state = { run: null, seq: -1, mode: "live", prompt: "", recording: "", message: "", caption: "",
                  warnings: [], done: false, sides: {}, cursor: null, playing: false, speed: 1, playKey: 0,
                  playLast: 0, view: options.clock === "passes" ? "passes" : "time", presenter: !!options.presenter, help: false,
                  inspect: null /* {side, pos, pinned}: the position the inspector shows */ };
    SIDES.forEach(function (s) { state.sides[s] = newSide(); });
    var timeline = null;
    var scheduled = false;
    var rafId = 0, timerId = 0;
    var chartSize = null;

    root.textContent = "";
    root.classList.add("cv-player");
    var top = el("div", "cv-top");
    var promptLine = el("p", "cv-prompt");
    promptLine.appendChild(el("span", "cv-label", "Prompt: "));
    var promptText = el("span", "cv-prompt-text");
    promptLine.appendChild(promptText);
    var captionLine = el("p", "cv-caption-line");
    var statusLine = el("p", "cv-status", "", { role: "status", "aria-live": "polite" });
    var warningBox = el("div", "cv-warning", null, { role: "alert" });
    warningBox.hidden = true;
    top.appendChild(captionLine);
    top.appendChild(promptLine);
    top.appendChild(statusLine);
    top.appendChild(warningBox);

    var progressBanner = el("p", "cv-progress-banner",
      "Compare by progress \u2014 NOT real time: each side is stretched to the length of its own run " +
      "(0\u2013100 %), so the faster side looks as slow as the slower one. Untick it to see the race as it happened.");
    progressBanner.hidden = true;
    var passesBanner = el("p", "cv-passes-banner", "");
    passesBanner.hidden = true;

    var legend = el("div", "cv-legend", null, { role: "list", "aria-label": "Legend", "data-part": "legend" });
    THEME.legend.forEach(function (name) {
      var st = STYLES[name], masked = st.glyph === "mask";
      var cls = st["class"] + (masked && name !== "masked" ? " " + STYLES.masked["class"] : "");
      var item = legendItem(cls, masked ? MASK : THEME.sample, st.label);
      item.setAttribute("role", "listitem");
      legend.appendChild(item);
    });
    var heatKey = el("span", "cv-legend-item cv-heat-key");
    heatKey.appendChild(el("span", "cv-label", "Heatmap:"));
    THEME.heat_key.forEach(function (x) {
      var sw = el("span", "cv-swatch", null, { "aria-hidden": "true" });
      sw.style.background = "rgb(" + HEAT[x[0]].join(",") + ")";
      heatKey.appendChild(sw);
      heatKey.appendChild(el("span", "cv-legend-label", x[1]));
    });
    legend.appendChild(heatKey);

    var inspectHintId = "cv-inspect-hint-" + Math.random().toString(36).slice(2, 9);
    var sidesBox = el("div", "cv-sides");
    var views = {};
    SIDES.forEach(function (s) {
      var section = el("section", "cv-side", null, { "data-side": s, "data-frames": "0", "data-step": "-1",
                                                     "data-status": "idle", "aria-label": sideWord(s) + " panel",
                                                     "data-part": "panel-" + s });
      var head = el("header", "cv-side-head");
      var name = el("span", "cv-spec", sideWord(s));
      var badge = el("span", "cv-badge", "idle");
      var counter = el("span", "cv-counter", "");
      head.appendChild(el("span", "cv-line-key cv-line-" + s, null, { "aria-hidden": "true" }));
      head.appendChild(name);
      head.appendChild(badge);
      head.appendChild(counter);
      var figs = el("div", "cv-figs");
      var elapsed = el("span", "cv-fig-num", "\u2014");
      var rate = el("span", "cv-fig-num", "\u2014");
      var rateLabel = el("span", "cv-fig-label", "tokens / s");
      var elapsedLabel = el("span", "cv-fig-label", "elapsed");
      [[elapsed, elapsedLabel, "elapsed"], [rate, rateLabel, "rate"]].forEach(function (f) {
        var box = el("span", "cv-fig", null, { "data-fig": f[2] });
        box.appendChild(f[0]);
        box.appendChild(f[1]);
        figs.appendChild(box);
      });
      var message = el("p", "cv-message", "", { role: "alert" });
      /* focusable so the keyboard can inspect positions; never a live region: it changes every frame */
      var text = el("div", "cv-text", null, {
        tabindex: "0", role: "group", "aria-label": sideWord(s) + " output", "aria-live": "off",
        "aria-describedby": inspectHintId,
        "aria-keyshortcuts": "ArrowLeft ArrowRight Shift+ArrowLeft Shift+ArrowRight Escape" });
      var inner = el("div", "cv-text-inner");
      text.appendChild(inner);
      var heatWrap = el("div", "cv-heat-wrap", null, { "data-part": "heatmap-" + s });
      var heat = el("canvas", "cv-heatmap", null, {
        "data-rows": "0", role: "img",
        "aria-label": sideWord(s) + " changes per frame: rows are frames, columns are positions" });
      heat.width = 1; heat.height = 1;
      var marker = el("div", "cv-heat-marker", null, { "aria-hidden": "true" });
      heatWrap.appendChild(heat);
      heatWrap.appendChild(marker);
      section.appendChild(head);
      section.appendChild(figs);
      section.appendChild(message);
      section.appendChild(text);
      section.appendChild(el("p", "cv-caption", "Changes per frame (top: first frame)"));
      section.appendChild(heatWrap);
      sidesBox.appendChild(section);
      views[s] = { section: section, name: name, badge: badge, counter: counter, message: message, text: text,
                   inner: inner, heat: heat, heatSrc: document.createElement("canvas"), heatSize: null, heatGen: 0,
                   heatOut: "", marker: marker, elapsed: elapsed, rate: rate, rateLabel: rateLabel,
                   elapsedLabel: elapsedLabel,
                   blocks: [], shown: [], shownText: [], lastLen: 0, atEnd: true, pin: false };
    });

    /* The token inspector: one region under the panels. Closed, it is a one-line hint with its own side and
       position pickers; open, it shows one position's history (see paintInspector). */
    var insp = el("section", "cv-inspector", null, { "data-part": "inspector", "aria-label": "Token inspector",
                                                   "data-open": "false" });
    var inspHead = el("div", "cv-insp-head");
    var inspTitle = el("p", "cv-insp-title", "Token inspector", { "aria-live": "polite" });
    var inspSide = el("select", "cv-insp-side", null, { "aria-label": "Side to inspect" });
    SIDES.forEach(function (s) { inspSide.appendChild(el("option", null, sideWord(s), { value: s })); });
    var inspPosId = "cv-insp-pos-" + Math.random().toString(36).slice(2, 9);
    var inspSig = "", inspHistory = null, revealSel = false;
    var inspPos = el("input", "cv-insp-pos", null, { type: "number", min: "0", step: "1", id: inspPosId,
                                                     inputmode: "numeric", placeholder: "#" });
    var inspClose = button("cv-btn cv-insp-close", "Close", "Close the token inspector (Esc)");
    inspHead.appendChild(inspTitle);
    inspHead.appendChild(inspSide);
    inspHead.appendChild(el("label", "cv-label", "Position", { for: inspPosId }));
    inspHead.appendChild(inspPos);
    inspHead.appendChild(inspClose);
    var inspHint = el("p", "cv-insp-hint", "Click a token (or rest the pointer on one), or Tab to a panel and press " +
      "\u2190 \u2192 (Shift: 10 at a time), to see that position's history. Esc closes.", { id: inspectHintId });
    var inspBody = el("div", "cv-insp-body");
    var inspNow = el("p", "cv-insp-now");
    var sparkWrap = el("div", "cv-spark-wrap");
    var spark = el("canvas", "cv-spark", null, { role: "img" });
    var sparkMarker = el("div", "cv-spark-marker", null, { "aria-hidden": "true" });
    sparkWrap.appendChild(spark);
    sparkWrap.appendChild(sparkMarker);
    var sparkNote = el("p", "cv-insp-note");
    var inspEvents = el("ol", "cv-insp-events", null, { "aria-label": "When this position changed" });
    var inspNote = el("p", "cv-insp-note cv-insp-noconf");
    inspBody.appendChild(inspNow);
    inspBody.appendChild(sparkWrap);
    inspBody.appendChild(sparkNote);
    inspBody.appendChild(inspEvents);
    inspBody.appendChild(inspNote);
    insp.appendChild(inspHead);
    insp.appendChild(inspHint);
    insp.appendChild(inspBody);

    var chartBox = el("div", "cv-chart-box", null, { "data-part": "chart" });
    var chartTitle = el("p", "cv-chart-title", "Convergence");
    var chart = el("canvas", "cv-chart", null, { role: "img", "aria-label": "Convergence over time for both sides" });
    var chartNote = el("p", "cv-chart-note", "");
    var chartWrap = el("div", "cv-chart-wrap");
    var chartMarker = el("div", "cv-chart-marker", null, { "aria-hidden": "true" });
    chartMarker.hidden = true;
    chartWrap.appendChild(chart);
    chartWrap.appendChild(chartMarker);
    chartBox.appendChild(chartTitle);
    chartBox.appendChild(chartWrap);
    chartBox.appendChild(chartNote);
    var chartDrawn = "", chartScale = null;

    var table = el("table", "cv-metrics", null, { "data-part": "metrics", "aria-label": "Metrics" });
    var thead = el("thead");
    var headRow = el("tr");
    headRow.appendChild(el("th", null, "Metric", { scope: "col" }));
    var colHeads = {};
    SIDES.forEach(function (s) {
      colHeads[s] = el("th", null, s, { scope: "col" });
      headRow.appendChild(colHeads[s]);
    });
    thead.appendChild(headRow);
    table.appendChild(thead);
    var tbody = el("tbody");
    var cells = {};
    METRICS.forEach(function (m) {
      var tr = el("tr", null, null, { "data-metric": m[0] });
      tr.appendChild(el("th", null, m[1], { scope: "row" }));
      cells[m[0]] = {};
      SIDES.forEach(function (s) {
        cells[m[0]][s] = el("td", null, "\u2014", { "data-side": s });
        tr.appendChild(cells[m[0]][s]);
      });
      tbody.appendChild(tr);
    });
    table.appendChild(tbody);

    var scrub = el("div", "cv-scrub", null, { role: "group", "aria-label": "Replay controls",
                                              "data-part": "scrubber" });
    var startBtn = button("cv-btn", "|\u25C0 Start", "Jump to start");
    var prevBtn = button("cv-btn", "\u25C0 Prev", "Previous frame");
    var playBtn = button("cv-btn cv-play", "\u25B6 Play", "Play");
    var nextBtn = button("cv-btn", "Next \u25B6", "Next frame");
    var endBtn = button("cv-btn", "End \u25B6|", "Jump to end");
    var rangeId = "cv-range-" + Math.random().toString(36).slice(2, 9);
    var rangeLabel = el("label", "cv-label", "Time", { for: rangeId });
    var range = el("input", "cv-range", null,
                   { type: "range", min: "0", max: "0", step: "1", value: "0", id: rangeId });
    var speedSel = el("select", "cv-speed", null, { "aria-label": "Playback speed", title: "Playback speed (keys 1\u20138)" });
    SPEEDS.forEach(function (v) {
      var o = el("option", null, speedText(v), { value: String(v) });
      if (v === 1) o.selected = true;
      speedSel.appendChild(o);
    });
    /* an <output> is a polite live region by default; this one changes every frame, so it is kept quiet */
    var timeOut = el("output", "cv-time", "", { for: rangeId, "aria-live": "off" });
    var viewLabel = el("label", "cv-view-toggle");
    var viewBox = el("input", "cv-view", null, { type: "checkbox" });
    viewLabel.appendChild(viewBox);
    viewLabel.appendChild(el("span", null, " Compare by progress (not real time)"));
    var clockBtn = button("cv-btn cv-clock-btn", "Clock: seconds", "Forward-pass clock", { "aria-pressed": "false" });
    var presenterBtn = button("cv-btn cv-presenter-btn", "Presenter", "Presenter mode", { "aria-pressed": "false" });
    var helpBtn = button("cv-btn cv-help-btn", "?", "Keyboard shortcuts", { "aria-expanded": "false" });
    [startBtn, prevBtn, playBtn, nextBtn, endBtn, rangeLabel, range, speedSel, timeOut, viewLabel, clockBtn,
     presenterBtn, helpBtn].forEach(function (n) { scrub.appendChild(n); });

    var helpId = "cv-help-" + Math.random().toString(36).slice(2, 9);
    var help = el("div", "cv-help", null, { role: "dialog", "aria-modal": "false", "aria-labelledby": helpId + "-t",
                                            id: helpId });
    help.hidden = true;
    helpBtn.setAttribute("aria-controls", helpId);
    var helpCard = el("div", "cv-help-card");
    helpCard.appendChild(el("p", "cv-help-title", "Keyboard shortcuts", { id: helpId + "-t" }));
    var helpList = el("dl", "cv-help-list");
    KEYS.forEach(function (k) {
      helpList.appendChild(el("dt", null, k[0]));
      helpList.appendChild(el("dd", null, k[1]));
    });
    helpCard.appendChild(helpList);
    var helpClose = button("cv-btn", "Close", "Close the keyboard shortcuts");
    helpCard.appendChild(helpClose);
    help.appendChild(helpCard);

    root.appendChild(top);
    root.appendChild(progressBanner);
    root.appendChild(passesBanner);
    root.appendChild(legend);
    root.appendChild(sidesBox);
    root.appendChild(insp);
    root.appendChild(scrub);
    root.appendChild(chartBox);
    root.appendChild(table);
    root.appendChild(help);

    range.addEventListener("input", function () { stopPlaying(); seek(parseInt(range.value, 10)); });
    startBtn.addEventListener("click", function () { stopPlaying(); seek(0); });
    prevBtn.addEventListener("click", function () { stopPlaying(); seek(cursorIndex() - 1); });
    nextBtn.addEventListener("click", function () { stopPlaying(); seek(cursorIndex() + 1); });
    endBtn.addEventListener("click", function () { stopPlaying(); seek(getTimeline().length - 1); });
    playBtn.addEventListener("click", togglePlay);
    speedSel.addEventListener("change", function () { setSpeed(parseFloat(speedSel.value)); });
    viewBox.addEventListener("change", function () { setView(viewBox.checked ? "progress" : "time"); });
    clockBtn.addEventListener("click", toggleClock);
    presenterBtn.addEventListener("click", function () { setPresenter(!state.presenter); });
    helpBtn.addEventListener("click", function () { setHelp(!state.help); });
    helpClose.addEventListener("click", function () { setHelp(false); helpBtn.focus(); });
    if (typeof ResizeObserver !== "undefined") {
      new ResizeObserver(function () { chartSize = null; schedule(); }).observe(chart);
      var heatResized = new ResizeObserver(function () {
        SIDES.forEach(function (s) { views[s].heatSize = null; });
        schedule();
      });
      SIDES.forEach(function (s) { heatResized.observe(views[s].heat); });
    }

    /* The inspector listens on each text panel, not on each token: a click, a resting pointer or the arrow
       keys pick a position, found from the point (positionAt) or counted from the last one. */
    var hoverTimer = 0;
    SIDES.forEach(function (s) {
      var v = views[s];
      v.text.addEventListener("click", function (e) {
        var selection = global.getSelection && global.getSelection();
        if (selection && !selection.isCollapsed) return; /* the reader was selecting text, not picking a token */
        var pos = positionAt(v, e.clientX, e.clientY);
        if (pos >= 0) inspect(s, pos, true, false);
      });
      v.text.addEventListener("mousemove", function (e) {
        if (hoverTimer) clearTimeout(hoverTimer);
        hoverTimer = 0;
        if (e.buttons || (state.inspect && state.inspect.pinned)) return;
        var x = e.clientX, y = e.clientY;
        hoverTimer = setTimeout(function () {
          hoverTimer = 0;
          var pos = positionAt(v, x, y);
          if (pos >= 0 && !(state.inspect && state.inspect.pinned)) inspect(s, pos, false, false);
        }, HOVER_MS);
      });
      v.text.addEventListener("mouseleave", function () {
        if (hoverTimer) clearTimeout(hoverTimer);
        hoverTimer = 0;
      });
      v.text.addEventListener("keydown", function (e) {
        if (e.ctrlKey || e.metaKey || e.altKey || (e.key !== "ArrowLeft" && e.key !== "ArrowRight")) return;
        var at = state.inspect && state.inspect.side === s ? state.inspect.pos : -1;
        var by = (e.key === "ArrowRight" ? 1 : -1) * (e.shiftKey ? 10 : 1);
        inspect(s, at < 0 ? 0 : at + by, true, true);
        e.preventDefault(); /* the page's own arrow keys (frame back / forward) stay out of it */
      });
    });
    inspPos.addEventListener("input", function () {
      var pos = parseInt(inspPos.value, 10);
      if (!isNaN(pos)) inspect(inspSide.value, pos, true, true);
    });
    inspSide.addEventListener("change", function () {
      if (state.inspect) inspect(inspSide.value, state.inspect.pos, true, true);
    });
    inspClose.addEventListener("click", closeInspector);
    insp.addEventListener("keydown", function (e) {
      if (e.key === "Escape") { closeInspector(); e.preventDefault(); }
    });

    function onKey(e) {
      if (!root.isConnected) { document.removeEventListener("keydown", onKey); return; }
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey) return;
      var t = e.target || {};
      var tag = t.tagName;
      if (t.isContentEditable || tag === "TEXTAREA" || tag === "SELECT" ||
          (tag === "INPUT" && t !== range && t !== viewBox)) return;
      var k = e.key;
      if (k === "?") { setHelp(!state.help); e.preventDefault(); return; }
      if (k === "Escape") {
        if (state.help) { setHelp(false); e.preventDefault(); }
        else if (state.inspect) { closeInspector(); e.preventDefault(); }
        return;
      }
      if ((tag === "BUTTON" || t === viewBox) && (k === " " || k === "Enter")) return; /* its own click */
      if (t === range && (k === "ArrowLeft" || k === "ArrowRight" || k === "Home" || k === "End")) return;
      if (k === "p" || k === "P") { setPresenter(!state.presenter); e.preventDefault(); return; }
      if (k === "f" || k === "F") { toggleClock(); e.preventDefault(); return; }
      if (!enabled()) return;
      var digit = /^[1-9]$/.test(k) ? parseInt(k, 10) : 0;
      if (k === " ") togglePlay();
      else if (k === "ArrowLeft") { stopPlaying(); seek(cursorIndex() - 1); }
      else if (k === "ArrowRight") { stopPlaying(); seek(cursorIndex() + 1); }
      else if (k === "Home") { stopPlaying(); seek(0); }
      else if (k === "End") { stopPlaying(); seek(getTimeline().length - 1); }
      else if (digit && digit <= SPEEDS.length) setSpeed(SPEEDS[digit - 1]);
      else if (k === "-" || k === "_") setSpeed(SPEEDS[Math.max(0, SPEEDS.indexOf(state.speed) - 1)]);
      else if (k === "+" || k === "=") setSpeed(SPEEDS[Math.min(SPEEDS.length - 1, SPEEDS.indexOf(state.speed) + 1)]);
      else if (k === "c" || k === "C") setView(state.view === "time" ? "progress" : "time");
      else return;
      e.preventDefault();
    }
    if (options.keyboard !== false) document.addEventListener("keydown", onKey);

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

    function setPresenter(on) {
      state.presenter = !!on;
      root.classList.toggle("cv-presenter", state.presenter);
      presenterBtn.setAttribute("aria-pressed", state.presenter ? "true" : "false");
      chartSize = null;
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

    function reset() {
      stopPlaying();
      state.seq = -1; state.prompt = ""; state.recording = ""; state.message = ""; state.done = false;
      state.caption = ""; state.warnings = [];
      state.cursor = null;
      state.inspect = null;
      SIDES.forEach(function (s) {
        state.sides[s] = newSide();
        views[s].shown = [];
        views[s].shownText = [];
        views[s].lastLen = 0;
      });
      timeline = null;
    }

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
               nfe: w.nfe == null ? null : w.nfe, final: !!w.final, sp: w.sp || 0, vis: null, cf: cf, cd: cd };
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

    function mergeSide(side, entry) {
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
        if (row.tok.length > side.maxLen) side.maxLen = row.tok.length;
        if (start + k < side.heatRows) side.heatRows = side.heatDrawn = start + k;
      }
      if (entry.metrics) side.metrics = JSON.parse(JSON.stringify(entry.metrics));
      if (entry.settled && entry.settled.length) {
        side.settled = entry.settled.map(function (p) { return [p[0], p[1]]; });
      }
    }

    function update(payload) {
      if (!payload || typeof payload !== "object") return;
      var fresh = payload.run !== state.run;
      if (fresh) { reset(); state.run = payload.run; }
      if (typeof payload.seq === "number") state.seq = payload.seq;
      if (payload.mode) state.mode = str(payload.mode);
      if (payload.prompt != null) state.prompt = str(payload.prompt);
      if (payload.recording != null) state.recording = str(payload.recording);
      if (payload.caption != null) state.caption = str(payload.caption);
      if (payload.warnings) state.warnings = payload.warnings.map(str);
      if ("message" in payload) state.message = str(payload.message);
      if (payload.done) state.done = true;
      var sides = payload.sides || {};
      SIDES.forEach(function (s) { if (sides[s]) mergeSide(state.sides[s], sides[s]); });
      if (state.done) SIDES.forEach(function (s) {
        var side = state.sides[s];
        if (!TERMINAL[side.status] && side.status !== "idle") side.status = side.rows.length ? "done" : side.status;
      });
      timeline = null;
      if (fresh && payload.cursor === "start" && getTimeline().length) state.cursor = 0;
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

    function finished() {
      if (state.run == null) return false;
      return state.done || SIDES.every(function (s) {
        var st = state.sides[s].status;
        return TERMINAL[st] || st === "idle";
      });
    }

    function enabled() { return finished() && getTimeline().length > 0; }

    function hasPasses(side) {
      /* whether the side reports forward passes (local and Hugging Face models do; API sources do not) */
      var last = lastRow(side);
      return last >= 0 && side.rows[last].nfe != null;
    }

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

    function keyRate() {
      /* timeline units per second of playback: seconds of race time, or (progress view) the share of the
         longer side's run, so 1x lasts as long as the slower side did */
      if (state.view === "passes") return state.speed * PASS_RATE;
      if (state.view !== "progress") return state.speed;
      var longest = Math.max(state.sides.left.end, state.sides.right.end);
      return longest > 0 ? state.speed / longest : state.speed;
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

    function lastRow(side) {
      for (var i = side.rows.length - 1; i >= 0; i--) if (side.rows[i]) return i;
      return -1;
    }

    function paint() {
      var started = performance.now();
      var done = finished();
      var tl = getTimeline();
      var scrubbing = done && state.cursor != null && tl.length > 0;
      var K = scrubbing ? tl[cursorIndex()] : null;
      var total = 0;
      var anyRunning = false, anyStopped = false, anyError = false, anyDone = false;
      SIDES.forEach(function (s) {
        /* read before any write, while layout is still clean from the last frame */
        var v = views[s], t = v.text;
        v.atEnd = t.scrollTop + t.clientHeight >= t.scrollHeight - 4;
        if (!v.heatSize) v.heatSize = [v.heat.clientWidth, v.heat.clientHeight];
      });
      SIDES.forEach(function (s) {
        var side = state.sides[s];
        var idx = K == null ? lastRow(side) : rowAt(side, K);
        paintSide(s, side, idx, done, scrubbing, K);
        total += side.rows.length;
        if (side.status === "running" || side.status === "waiting") anyRunning = true;
        if (side.status === "stopped") anyStopped = true;
        if (side.status === "error") anyError = true;
        if (side.status === "done") anyDone = true;
      });
      var overall = state.run == null || state.mode === "message" ? "idle" : !done ? "running" : anyStopped ? "stopped"
        : anyError && !anyDone ? "error" : "done";
      setAttr(root, "data-status", overall);
      setAttr(root, "data-frames", String(total));
      setAttr(root, "data-step", String(tl.length ? cursorIndex() : -1));
      setAttr(root, "data-run", str(state.run));
      setAttr(root, "data-mode", state.mode);
      setAttr(root, "data-view", state.view);
      setAttr(root, "data-key", K == null ? "" : String(K));
      setAttr(root, "data-speed", String(state.speed));
      setAttr(root, "data-playing", state.playing ? "true" : "false");
      setAttr(root, "data-presenter", state.presenter ? "true" : "false");
      setText(promptText, state.prompt);
      promptLine.hidden = !state.prompt;
      setText(captionLine, state.caption);
      captionLine.hidden = !state.caption;
      progressBanner.hidden = state.view !== "progress";
      paintClock();
      var status = state.message;
      if (!status) {
        /* the words are theme.json's sentences; the video export's line is app/view/side.py status_sentence */
        var say = THEME.sentences;
        if (overall === "idle") status = say.idle;
        else if (overall === "running") status = anyRunning ? say.racing : say.finishing;
        else if (overall === "stopped") status = say.stopped;
        else if (overall === "error") status = say.failed;
        else status = state.mode === "replay" ? say.loaded : say.finished;
        if (state.recording && overall !== "idle") {
          status += (overall === "running" ? " Recording to " : state.mode === "replay" ? " \u2014 " : " Saved as ") +
            state.recording + ".";
        }
        if (state.mode === "replay" && overall !== "idle" && tl.length && !state.playing && cursorIndex() === 0) {
          status += " Press Play (or Space) to start.";
        }
      }
      setText(statusLine, status);
      var warnings = state.warnings.join(" ");
      setText(warningBox, warnings ? "Warning: " + warnings : "");
      warningBox.hidden = !warnings;
      paintScrub(done, tl);
      paintChart(K, done);
      if (!state.presenter) paintMetrics();
      SIDES.forEach(function (s) { if (views[s].pin) views[s].text.scrollTop = views[s].text.scrollHeight; });
      paintInspector();
      var hook = options.onPaint || (api && api.onPaint);
      if (hook) hook(performance.now() - started);
    }

    function paintSide(s, side, idx, done, scrubbing, K) {
      var v = views[s];
      setAttr(v.section, "data-status", side.status);
      setAttr(v.section, "data-frames", String(side.rows.length));
      setAttr(v.section, "data-step", String(idx));
      var name = displayName(side, s);
      setText(v.name, name);
      setAttr(v.section, "aria-label", sideWord(s) + " panel: " + name);
      setAttr(v.text, "aria-label", sideWord(s) + " output: " + name);
      setText(v.badge, STATUS_TEXT[side.status] || side.status);
      var badgeClass = "cv-badge cv-st-" + (STATUS_TEXT[side.status] ? side.status : "other");
      if (v.badge.className !== badgeClass) v.badge.className = badgeClass;
      setText(v.counter, side.rows.length ? "frame " + (idx + 1) + " / " + side.rows.length : "");
      setText(v.message, side.message);
      v.message.hidden = !side.message;
      setText(colHeads[s], name);
      var row = idx >= 0 ? side.rows[idx] : null;
      paintFigures(v, side, row, idx, K);
      v.idx = idx;
      paintTokens(v, row, side, idx, done, state.inspect && state.inspect.side === s ? state.inspect.pos : -1);
      paintHeat(v, side, scrubbing ? idx : -1);
    }

    function paintFigures(v, side, row, idx, K) {
      /* elapsed: on the shared timeline, the race clock (the time of the frame the timeline is at, from
         either side) until this side's last frame, then that frame's t; otherwise the shown frame's own t.
         rate: tokens of the final answer already in place at the shown frame (the settled share, as in the
         video export), or while live the visible tokens, over elapsed. */
      var last = lastRow(side);
      if (last < 0) { setText(v.elapsed, "\u2014"); setText(v.rate, "\u2014"); return; }
      if (onPasses(side)) { paintPassFigures(v, side, row, idx, K, last); return; }
      setText(v.elapsedLabel, state.view === "passes" ? "elapsed (reports no forward passes)" : "elapsed");
      var t = row ? row.t : 0;
      if (K != null && state.view === "time") t = Math.min(K, side.rows[last].t);
      var tok = tokensAt(side, row, idx);
      setText(v.elapsed, t.toFixed(2) + " s");
      setText(v.rate, t > 0 ? (tok.n / t).toFixed(1) : "\u2014");
      setText(v.rateLabel, tok.settled ? "tokens / s (final tokens in place)" : "tokens / s (visible, live)");
    }

    function tokensAt(side, row, idx) {
      /* tokens of the final answer already in place at frame idx, or while live the visible tokens */
      var settled = side.settled && side.metrics && side.settled.length === side.rows.length;
      return { n: !row ? 0 : settled ? Math.round(side.settled[idx][1] * side.metrics.tokens) : visibleCount(row),
               settled: settled };
    }

    function paintPassFigures(v, side, row, idx, K, last) {
      /* on the forward-pass clock: passes so far (the timeline's count until this side's last frame, then its
         own) and tokens per pass; counts, never seconds */
      var n = row && row.nfe != null ? row.nfe : 0;
      if (K != null) n = Math.min(K, side.rows[last].nfe);
      var tok = tokensAt(side, row, idx);
      setText(v.elapsed, String(n) + (n === 1 ? " pass" : " passes"));
      setText(v.elapsedLabel, "forward passes");
      setText(v.rate, n > 0 ? (tok.n / n).toFixed(2) : "\u2014");
      setText(v.rateLabel, tok.settled ? "tokens / pass (final tokens in place)" : "tokens / pass (visible, live)");
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

    function paintTokens(v, row, side, idx, done, sel) {
      /* Each position's style and text are compared with what is on screen; only the blocks holding a
         difference are rebuilt. Within a block, neighbours with the same style share one node (a plain text
         node when unstyled), so a 1,000-token panel is a few hundred inline boxes instead of a thousand and
         the browser's text layout and paint, which grow with that count, stay cheap. */
      var tok = row ? row.tok : [];
      var m = row && row.m, ch = row && row.ch;
      var settledAll = done && side.status === "done" && idx === side.rows.length - 1;
      var sp = row && typeof row.sp === "number" ? row.sp : 0;
      var textSource = row && !m;
      var n = tok.length, shown = v.shown, shownText = v.shownText, blocks = v.blocks;
      var nBlocks = Math.ceil(n / BLOCK);
      while (blocks.length < nBlocks) blocks.push(v.inner.appendChild(el("span", "cv-blk")));
      while (blocks.length > nBlocks) v.inner.removeChild(blocks.pop());
      var dirty = [], cut = shown.length > n && n % BLOCK;
      shown.length = Math.min(shown.length, n);
      shownText.length = shown.length;
      var draftFrom = textSource && !settledAll ? sp : n;
      for (var i = 0; i < n; i++) {
        var masked = m && m[i] ? 1 : 0;
        var code = ch ? ch[i] : 0;
        /* app/view/side.py cell_style's rule as bits (TOKEN_CLASS): computed here, as it hangs on what only the
           browser knows, the inspected position and whether the row shown is a finished side's last */
        var style = masked | code << 1 | (code === 0 && i >= draftFrom ? 8 : 0) | (i === sel ? 16 : 0);
        var text = masked ? MASK : tok[i];
        if (shown[i] !== style || shownText[i] !== text) {
          shown[i] = style;
          shownText[i] = text;
          var b = (i / BLOCK) | 0;
          if (dirty[dirty.length - 1] !== b) dirty.push(b);
        }
      }
      if (cut && dirty[dirty.length - 1] !== nBlocks - 1) dirty.push(nBlocks - 1);
      for (var k = 0; k < dirty.length; k++) fillBlock(v, dirty[k], n);
      setAttr(v.text, "data-tokens", String(n));
      /* a typing side that was scrolled to its end keeps its newest words in view (applied after all writes) */
      v.pin = !!textSource && n > v.lastLen && v.atEnd;
      v.lastLen = n;
    }

    function fillBlock(v, b, n) {
      /* Rebuilds one block's runs, keeping each node already in place that has the run's style (only its text
         may change), so a frame that highlights one token touches a node or two rather than the whole block. */
      var from = b * BLOCK, to = Math.min(n, from + BLOCK), block = v.blocks[b], child = block.firstChild;
      for (var i = from; i < to;) {
        var style = v.shown[i], text = v.shownText[i], j = i + 1;
        for (; j < to && v.shown[j] === style; j++) text += v.shownText[j];
        var node = child;
        if (node && (style ? node.nodeType === 1 && node.className === TOKEN_CLASS[style] : node.nodeType === 3)) {
          setRunText(node, text);
          child = node.nextSibling;
        } else {
          node = style ? el("span", TOKEN_CLASS[style], text) : document.createTextNode(text);
          block.insertBefore(node, child);
        }
        if (style & 16) v.selNode = node;
        i = j;
      }
      while (child) {
        var next = child.nextSibling;
        block.removeChild(child);
        child = next;
      }
    }

    function setRunText(node, text) {
      /* through the text node's data where there is one: the browser then reshapes only what changed */
      var t = node.nodeType === 3 ? node : node.firstChild;
      if (t && t.nodeType === 3 && !t.nextSibling) { if (t.data !== text) t.data = text; }
      else if (node.textContent !== text) node.textContent = text;
    }

    function paintHeat(v, side, idx) {
      /* idx: the frame to mark while scrubbing, -1 for none. New rows are put, one pixel per cell, on an
         offscreen canvas; the visible canvas gets that image scaled once to its own device pixels, and only
         when rows arrive or its size changes. The compositor then copies it unscaled on every frame,
         instead of filtering a 1,000-column image down to the panel each time anything near it moves. */
      var rows = side.rows, n = rows.length, w = Math.max(1, side.maxLen);
      var canvas = v.heat;
      if (!n) {
        if (canvas.width !== 1 || canvas.height !== 1) { canvas.width = 1; canvas.height = 1; }
        canvas.getContext("2d").clearRect(0, 0, 1, 1);
        setAttr(canvas, "data-rows", "0");
        v.marker.hidden = true;
        v.heatOut = "";
        side.heatDrawn = 0;
        return;
      }
      if (!side.heat || side.heatW !== w || side.heat.length < w * n) {
        var capacity = Math.max(n, side.heat && side.heatW === w ? (side.heat.length / w) * 2 : 64);
        var buf = new Uint32Array(w * capacity);
        if (side.heat && side.heatW === w) buf.set(side.heat.subarray(0, w * side.heatRows));
        else side.heatRows = 0;
        side.heat = buf;
        side.heatW = w;
      }
      var buf32 = side.heat;
      for (var r = side.heatRows; r < n; r++) {
        var row = rows[r], base = r * w;
        for (var c = 0; c < w; c++) {
          if (!row || c >= row.tok.length) { buf32[base + c] = HEAT32.empty; continue; }
          buf32[base + c] = cellColour(row.ch ? row.ch[c] : 0, !!(row.m && row.m[c]));
        }
      }
      side.heatRows = n;
      var cells = v.heatSrc;
      if (cells.width !== w || cells.height !== n) {
        cells.width = w;
        cells.height = n;
        side.heatDrawn = 0;
      }
      if (side.heatDrawn < n) {
        var from = side.heatDrawn;
        var image = new ImageData(new Uint8ClampedArray(buf32.buffer, from * w * 4, w * (n - from) * 4), w, n - from);
        cells.getContext("2d").putImageData(image, 0, from);
        side.heatDrawn = n;
        v.heatGen++;
        setAttr(canvas, "data-rows", String(n));
        setAttr(canvas, "data-cols", String(w));
      }
      var dpr = global.devicePixelRatio || 1;
      var W = Math.round(v.heatSize[0] * dpr), H = Math.round(v.heatSize[1] * dpr);
      var out = W + "x" + H + ":" + v.heatGen;
      if (W > 0 && H > 0 && v.heatOut !== out) {
        if (canvas.width !== W) canvas.width = W;
        if (canvas.height !== H) canvas.height = H;
        var ctx = canvas.getContext("2d");
        /* crisp cells while each gets at least a pixel; averaged when squeezed */
        ctx.imageSmoothingEnabled = n > H || w > W;
        ctx.imageSmoothingQuality = "medium"; /* mipmapped averaging, at half the cost of "high" */
        ctx.clearRect(0, 0, W, H);
        ctx.drawImage(cells, 0, 0, w, n, 0, 0, W, H);
        v.heatOut = out;
      }
      if (v.marker.hidden !== idx < 0) v.marker.hidden = idx < 0;
      /* the marker spans the heatmap's height and is moved by a transform: no repaint of the heatmap */
      if (idx >= 0) {
        var move = "translateY(" + ((idx + 0.5) / n * 100).toFixed(3) + "%)";
        if (v.marker.style.transform !== move) v.marker.style.transform = move;
      }
    }

    function liveSeries(side, denom) {
      /* Live estimate: positions committed (unmasked) and unchanged since the previous frame,
         over the longest draft so far. */
      var out = [];
      for (var i = 0; i < side.rows.length; i++) {
        var row = side.rows[i];
        if (!row) continue;
        var hits = side.live[i];
        if (hits == null) {
          hits = 0;
          for (var k = 0; k < row.tok.length; k++) {
            if (row.ch && row.ch[k] === 0 && !(row.m && row.m[k]) && row.tok[k].trim()) hits++;
          }
          side.live[i] = hits;
        }
        out.push([row.t, denom ? hits / denom : 0]);
      }
      return out;
    }

    function dark() {
      return !!(root.closest && root.closest(".dark")) || root.getAttribute("data-theme") === "dark" ||
        (root.classList.contains("cv-auto-theme") && global.matchMedia &&
         global.matchMedia("(prefers-color-scheme: dark)").matches);
    }

    function paintChart(K, done) {
      /* The lines are redrawn only when the data, the size or the theme change; the time marker is a
         positioned element, so playing moves one element instead of redrawing the chart. */
      var dpr = global.devicePixelRatio || 1;
      if (!chartSize) chartSize = [chart.clientWidth || 600, chart.clientHeight || 180];
      var cssW = chartSize[0], cssH = chartSize[1];
      var sig = [cssW, cssH, dpr, dark(), state.run, state.view === "passes"].concat(SIDES.map(function (s) {
        var side = state.sides[s];
        return side.rows.length + ":" + (side.settled ? side.settled.length : -1) + ":" + side.maxLen + ":" +
          displayName(side, s);
      })).join("|");
      if (sig !== chartDrawn) {
        drawChart(cssW, cssH, dpr);
        chartDrawn = sig;
      }
      var show = K != null && (state.view === "time" || state.view === "passes") && chartScale;
      if (chartMarker.hidden !== !show) chartMarker.hidden = !show;
      if (show) {
        var move = "translateX(" + Math.round(chartScale.x(K)) + "px)";
        if (chartMarker.style.transform !== move) chartMarker.style.transform = move;
        chartMarker.style.top = chartScale.top + "px";
        chartMarker.style.height = chartScale.height + "px";
      }
    }

    function drawChart(cssW, cssH, dpr) {
      var W = Math.round(cssW * dpr), H = Math.round(cssH * dpr);
      if (chart.width !== W) chart.width = W;
      if (chart.height !== H) chart.height = H;
      var ctx = chart.getContext("2d");
      var isDark = dark();
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, cssW, cssH);
      var denom = Math.max(1, state.sides.left.maxLen, state.sides.right.maxLen);
      var series = {}, kinds = {}, tMax = 0, passes = state.view === "passes", off = [];
      SIDES.forEach(function (s) {
        var side = state.sides[s];
        if (side.settled) { series[s] = side.settled; kinds[s] = "settled"; }
        else { series[s] = liveSeries(side, denom); kinds[s] = "live"; }
        if (passes) {
          if (hasPasses(side) && series[s].length === side.rows.length) series[s] = onPassAxis(side, series[s]);
          else { if (lastRow(side) >= 0) off.push(displayName(side, s)); series[s] = []; kinds[s] = "none"; }
        }
        series[s].forEach(function (p) { if (p[0] > tMax) tMax = p[0]; });
      });
      tMax = tMax > 0 ? tMax : 1;
      var padL = 42, padR = 10, padT = 8, padB = 26;
      var pw = cssW - padL - padR, ph = cssH - padT - padB;
      var x = function (t) { return padL + t / tMax * pw; };
      var y = function (f) { return padT + (1 - f) * ph; };
      gridStyle(ctx, 11, isDark);
      [0, 0.5, 1].forEach(function (f) {
        ctx.moveTo(padL, y(f) + 0.5); ctx.lineTo(padL + pw, y(f) + 0.5);
        ctx.fillText(Math.round(f * 100) + "%", 4, y(f) + 4);
      });
      ctx.stroke();
      var step = niceStep(tMax);
      var digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
      for (var t = 0; t <= tMax + 1e-9; t += step) {
        ctx.fillText(t.toFixed(digits) + (passes ? "" : " s"), x(t) - 10, cssH - 8);
      }
      SIDES.forEach(function (s) {
        var pts = series[s];
        if (!pts.length) return;
        ctx.strokeStyle = isDark ? LINE[s].dark : LINE[s].color;
        ctx.setLineDash(LINE[s].dash);
        ctx.lineWidth = 2.5;
        ctx.beginPath();
        /* a step line: a value holds until the next frame */
        ctx.moveTo(x(pts[0][0]), y(pts[0][1]));
        for (var i = 1; i < pts.length; i++) {
          ctx.lineTo(x(pts[i][0]), y(pts[i - 1][1]));
          ctx.lineTo(x(pts[i][0]), y(pts[i][1]));
        }
        ctx.stroke();
      });
      ctx.setLineDash([]);
      chartScale = { x: x, top: padT, height: ph };
      setAttr(chart, "data-kind-left", kinds.left);
      setAttr(chart, "data-kind-right", kinds.right);
      var words = SIDES.filter(function (s) { return kinds[s] !== "none"; }).map(function (s) {
        var name = displayName(state.sides[s], s);
        return (s === "left" ? "solid blue: " : "dashed orange: ") + name + " \u2014 " +
          (kinds[s] === "settled" ? "share of the final answer already in place" :
           "live estimate: committed positions unchanged since the previous frame, over the longest draft so far");
      });
      var axis = passes ? "x axis: forward passes (network calls) since each request was sent, not seconds." +
        (off.length ? " Not on this axis (no forward passes reported): " + off.join(", ") + "." : "")
        : "x axis: real time since each request was sent.";
      setText(chartNote, words.concat([axis]).join(" \u00B7 "));
      setAttr(chart, "aria-label", passes ? "Convergence over forward passes for both sides"
        : "Convergence over time for both sides");
    }

    function onPassAxis(side, pts) {
      /* a side's series with each point moved from its frame's time to its frame's forward passes */
      var out = [];
      for (var i = 0; i < pts.length; i++) if (side.rows[i] && side.rows[i].nfe != null) out.push([side.rows[i].nfe, pts[i][1]]);
      return out;
    }

    function niceStep(tMax) {
      var raw = Math.max(tMax / 6, state.view === "passes" ? 1 : 0), pow = Math.pow(10, Math.floor(Math.log10(raw)));
      var n = raw / pow;
      return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * pow;
    }

    function paintMetrics() {
      /* time per token is shown beside time to final when the answers' lengths differ; each length names its unit */
      var ml = state.sides.left.metrics, mr = state.sides.right.metrics;
      var differ = !!(ml && mr && ml.answer_tokens !== mr.answer_tokens);
      var perToken = cells.time_per_token.left.parentNode;
      if (perToken.hidden === differ) perToken.hidden = !differ;
      SIDES.forEach(function (s) {
        var side = state.sides[s], m = side.metrics;
        METRICS.forEach(function (def) {
          var cell = cells[def[0]][s];
          var text;
          if (m && def[0] === "answer_tokens") text = m.answer_tokens == null ? "\u2014" : m.answer_tokens + " " + str(m.token_unit);
          else if (m) text = def[2](m[def[0]]);
          else if (def[0] === "frames") text = side.rows.length ? String(side.rows.length) : "\u2014";
          else text = side.status === "running" ? "\u2026" : "\u2014";
          setText(cell, text);
        });
      });
    }

    function paintScrub(done, tl) {
      var on = done && tl.length > 0;
      [startBtn, prevBtn, playBtn, nextBtn, endBtn, range, speedSel, viewBox].forEach(function (n) {
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
      setText(timeOut, where);
      setAttr(range, "aria-valuetext", where || "no frames yet");
    }

    function inspect(s, pos, pinned, reveal) {
      /* reveal: scroll the inspected token into view (the keyboard moved it, maybe out of sight) */
      var n = state.sides[s].maxLen;
      if (!n) return;
      state.inspect = { side: s, pos: Math.max(0, Math.min(n - 1, pos | 0)), pinned: pinned };
      revealSel = reveal;
      schedule();
    }

    function closeInspector() {
      if (!state.inspect) return;
      var s = state.inspect.side;
      var hadFocus = insp.contains(document.activeElement);
      state.inspect = null;
      schedule();
      if (hadFocus) views[s].text.focus(); /* the Close button is about to disappear: keep the keyboard's place */
    }

    function positionAt(v, x, y) {
      /* The position of the character under a point: the caret position there, then whichever character
         beside it holds the point, counted through the block's runs (see paintTokens). */
      var node = null, offset = 0;
      if (document.caretPositionFromPoint) {
        var cp = document.caretPositionFromPoint(x, y);
        if (cp) { node = cp.offsetNode; offset = cp.offset; }
      } else if (document.caretRangeFromPoint) {
        var cr = document.caretRangeFromPoint(x, y);
        if (cr) { node = cr.startContainer; offset = cr.startOffset; }
      }
      if (!node || node.nodeType !== 3 || !v.inner.contains(node)) return -1;
      var block = node.parentNode.classList.contains("cv-blk") ? node.parentNode : node.parentNode.parentNode;
      var b = v.blocks.indexOf(block);
      if (b < 0) return -1;
      var range = document.createRange(), at = -1;
      [offset, offset - 1].some(function (k) {
        if (k < 0 || k >= node.length) return false;
        range.setStart(node, k);
        range.setEnd(node, k + 1);
        var rects = range.getClientRects();
        for (var r = 0; r < rects.length; r++) {
          var box = rects[r];
          if (x >= box.left && x <= box.right && y >= box.top && y <= box.bottom) { at = k; return true; }
        }
        return false;
      });
      if (at < 0) return -1;
      for (var c = block.firstChild; c && c !== node && c !== node.parentNode; c = c.nextSibling) {
        at += c.textContent.length;
      }
      for (var i = b * BLOCK; i < v.shownText.length; i++) {
        at -= v.shownText[i].length;
        if (at < 0) return i;
      }
      return -1;
    }

    function paintInspector() {
      /* Closed: a hint. Open: the history is rebuilt only when the position or the rows change; each frame
         only moves the "now" line and its marker on the sparkline. */
      var ins = state.inspect;
      setAttr(insp, "data-open", ins ? "true" : "false");
      if (inspBody.hidden !== !ins) inspBody.hidden = !ins;
      if (inspClose.hidden !== !ins) inspClose.hidden = !ins;
      if (inspHint.hidden !== !!ins) inspHint.hidden = !!ins;
      if (!ins) {
        setText(inspTitle, "Token inspector");
        setAttr(insp, "data-pos", "");
        inspSig = "";
        return;
      }
      var side = state.sides[ins.side], p = ins.pos;
      setAttr(insp, "data-side", ins.side);
      setAttr(insp, "data-pos", String(p));
      if (inspSide.value !== ins.side) inspSide.value = ins.side;
      setAttr(inspPos, "max", String(Math.max(0, side.maxLen - 1)));
      if (document.activeElement !== inspPos && inspPos.value !== String(p)) inspPos.value = String(p);
      setText(inspTitle, sideWord(ins.side) + " \u00B7 " + displayName(side, ins.side) + " \u2014 position " + p);
      var sig = [state.run, ins.side, p, side.rows.length, side.status, dark(), global.devicePixelRatio || 1].join("|");
      if (sig !== inspSig) {
        inspHistory = history(side, p);
        listEvents(inspHistory, side, p);
        drawSpark(inspHistory, ins.side, p);
        inspSig = sig;
      }
      paintNow(side, views[ins.side].idx, p);
      if (revealSel && views[ins.side].selNode) views[ins.side].selNode.scrollIntoView({ block: "nearest" });
      revealSel = false;
    }

    function history(side, p) {
      /* One pass over the rows: position p's confidence at each frame, whether it was masked, and its events
         (a change code at p, or candidates recorded for p). */
      var rows = side.rows, conf = [], masked = [], events = [], hasConf = false, masks = false;
      for (var r = 0; r < rows.length; r++) {
        var row = rows[r];
        var here = row && p < row.tok.length;
        var value = here && row.cf && p < row.cf.length ? row.cf[p] : -1;
        if (row && row.cf) hasConf = true;
        if (row && row.m) masks = true;
        conf.push(value);
        masked.push(here && row.m ? row.m[p] : 0);
        if (!row) continue;
        var cands = null;
        if (row.cd) for (var k = 0; k < row.cd.length; k++) if (row.cd[k][0] === p) cands = row.cd[k][1];
        var code = p < row.ch.length ? row.ch[p] : 0;
        if (code || cands) events.push({ r: r, code: code, cands: cands });
      }
      return { conf: conf, masked: masked, events: events, hasConf: hasConf, masks: masks };
    }

    function listEvents(h, side, p) {
      var items = [], commits = 0;
      for (var k = 0; k < h.events.length && items.length < MAX_EVENTS; k++) {
        var e = h.events[k], row = side.rows[e.r];
        var word = e.code === 1 ? (h.masks ? (commits++ ? "re-committed" : "committed") : "appeared")
          : e.code === 2 ? "changed" : e.code === 3 ? "remasked" : "weighed";
        var li = el("li", "cv-insp-event", null, { "data-code": String(e.code) });
        li.appendChild(el("span", "cv-insp-when", "step " + row.step + " \u00B7 frame " + (e.r + 1) + " \u00B7 t = " +
          row.t.toFixed(3) + " s"));
        li.appendChild(document.createTextNode(" " + word + " "));
        if (e.code !== 3 && p < row.tok.length && !(row.m && row.m[p])) {
          li.appendChild(el("span", "cv-insp-tok", quoted(row.tok[p])));
        }
        if (e.cands && e.cands.length) {
          li.appendChild(document.createTextNode(e.code === 3 ? " \u2014 its top candidates then: "
                                                              : " \u2014 top candidates: "));
          e.cands.forEach(function (c, i) {
            if (i) li.appendChild(document.createTextNode(", "));
            li.appendChild(el("span", "cv-insp-tok", quoted(c[0])));
            li.appendChild(document.createTextNode(" " + c[1] + " %"));
          });
        }
        items.push(li);
      }
      if (h.events.length > items.length) {
        items.push(el("li", "cv-insp-more", "\u2026 and " + (h.events.length - items.length) + " more (not listed)"));
      }
      if (!h.events.length) items.push(el("li", "cv-insp-more", "No change at this position yet."));
      inspEvents.replaceChildren.apply(inspEvents, items);
      inspNote.hidden = h.hasConf;
      setText(inspNote, "This source reports no confidences (API sources do not), so there is no confidence line " +
        "and there are no candidates: the list shows when this position changed.");
      sparkWrap.hidden = sparkNote.hidden = !h.hasConf;
    }

    function drawSpark(h, s, p) {
      /* Confidence (0-100 %) of one position at each frame: solid once committed, dashed while masked (the
         top candidate's probability then), with a dot for each event coloured as in the heatmap. */
      var n = h.conf.length, dpr = global.devicePixelRatio || 1, isDark = dark();
      var W = SPARK[0], H = SPARK[1];
      if (spark.width !== Math.round(W * dpr)) spark.width = Math.round(W * dpr);
      if (spark.height !== Math.round(H * dpr)) spark.height = Math.round(H * dpr);
      var ctx = spark.getContext("2d");
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, W, H);
      if (!h.hasConf) return;
      gridStyle(ctx, 10, isDark);
      [0, 50, 100].forEach(function (v) {
        var y = sparkY(v) + 0.5;
        ctx.moveTo(SPARK_PAD[0], y);
        ctx.lineTo(W - SPARK_PAD[1], y);
        ctx.fillText(v + "%", 2, y + 3);
      });
      ctx.stroke();
      ctx.strokeStyle = isDark ? LINE[s].dark : LINE[s].color;
      ctx.lineWidth = 2;
      for (var r = 1; r < n; r++) {
        if (h.conf[r - 1] < 0 || h.conf[r] < 0) continue;
        ctx.setLineDash(h.masked[r] ? [3, 3] : []);
        ctx.beginPath();
        ctx.moveTo(sparkX(r - 1, n), sparkY(h.conf[r - 1]));
        ctx.lineTo(sparkX(r, n), sparkY(h.conf[r]));
        ctx.stroke();
      }
      if (n === 1 && h.conf[0] >= 0) ctx.fillRect(sparkX(0, n) - 1, sparkY(h.conf[0]) - 1, 3, 3);
      ctx.setLineDash([]);
      ctx.lineWidth = 1;
      ctx.strokeStyle = themeColour("dot-edge", isDark);
      h.events.forEach(function (e) {
        var colour = HEAT[e.code === 1 ? "fresh" : e.code === 2 ? "changed" : e.code === 3 ? "remasked" : "unchanged"];
        var v = h.conf[e.r] >= 0 ? h.conf[e.r] : 0;
        ctx.fillStyle = "rgb(" + colour.join(",") + ")";
        ctx.beginPath();
        ctx.arc(sparkX(e.r, n), sparkY(v), 3.5, 0, 2 * Math.PI);
        ctx.fill();
        ctx.stroke();
      });
      var seen = h.conf.filter(function (v) { return v >= 0; });
      setAttr(spark, "aria-label", seen.length
        ? "Confidence of position " + p + " over " + n + " frames: first " + seen[0] + " %, last " +
          seen[seen.length - 1] + " %, lowest " + Math.min.apply(null, seen) + " %, highest " +
          Math.max.apply(null, seen) + " %"
        : "No confidence recorded for position " + p);
      setText(sparkNote, "Confidence at each frame (dashed while masked: its top candidate's probability); " +
        "dots: committed (sky blue), changed (vermillion), remasked (black), as in the heatmap; " +
        "the line is the frame shown.");
    }

    function sparkX(r, n) {
      return SPARK_PAD[0] + (n > 1 ? r / (n - 1) : 0.5) * (SPARK[0] - SPARK_PAD[0] - SPARK_PAD[1]);
    }
    function sparkY(v) { return 4 + (1 - v / 100) * (SPARK[1] - 8); }

    function paintNow(side, idx, p) {
      /* the inspected position at the frame shown (per frame: a line of text and the marker's place) */
      var row = idx >= 0 ? side.rows[idx] : null, text;
      if (!row) text = "Before this side's first frame.";
      else {
        text = "Frame " + (idx + 1) + " / " + side.rows.length + " (step " + row.step + ", t = " +
          row.t.toFixed(3) + " s): ";
        if (p >= row.tok.length) text += "not produced yet.";
        else {
          var masked = row.m && row.m[p];
          var cf = row.cf && p < row.cf.length ? row.cf[p] : -1;
          text += masked ? "masked" : quoted(row.tok[p]);
          if (cf >= 0) text += (masked ? " \u00B7 top candidate at " : " \u00B7 confidence ") + cf + " %";
        }
      }
      setText(inspNow, text);
      var show = !!row && inspHistory && inspHistory.hasConf;
      if (sparkMarker.hidden !== !show) sparkMarker.hidden = !show;
      if (show) {
        var left = (sparkX(idx, side.rows.length) / SPARK[0] * 100).toFixed(2) + "%";
        if (sparkMarker.style.left !== left) sparkMarker.style.left = left;
      }
    }

    var api = null;
    if (state.presenter) setPresenter(true);
    paint();
    api = { update: update, reset: function () { state.run = null; reset(); schedule(); }, root: root,
                state: state, paint: paint, play: startPlaying, pause: stopPlaying, seek: seek,
                setSpeed: setSpeed, setView: setView, setPresenter: setPresenter, speeds: SPEEDS.slice() };
    root.convergePlayer = api; /* for tests and the browser console */
    return api;
  }

  function mount(root, data, options) {
    var player = create(root, options);
    player.update(data);
    return player;
  }

  global.ConvergePlayer = { create: create, mount: mount, version: 2 };
})(typeof window !== "undefined" ? window : this);
