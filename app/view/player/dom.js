/* Converge player: the DOM, built once per player from fixed strings and textContent; what changes later is
   set by the other parts through setText / setAttr. Returns the nodes the other parts draw into. */
import { DRAFT_METRICS, HEAT, KEYS, MASK, METRICS, ONLY_IF_SEEN, SIDES, SPEEDS, STYLES, button, el, legendItem,
  paceText, sideWord, speedText
} from "./common.js";
/* Copies each node of `part` into `ui`, the nodes the other parts draw into. */
function into(ui, part) {
  for (var key in part) ui[key] = part[key];
  return ui;
}

/* A fresh id for a label's `for` or an aria reference, unique on a page with several players. */
function freshId(prefix) { return prefix + Math.random().toString(36).slice(2, 9); }

export function buildDom(root) {
  root.textContent = "";
  root.classList.add("cv-player");
  var inspectHintId = freshId("cv-inspect-hint-");
  var ui = into(into(into({}, buildTop()), buildBanners()), buildLegend());
  into(into(ui, buildSides(inspectHintId)), buildInspector(inspectHintId));
  into(into(into(ui, buildChart()), buildMetrics()), buildScrub());
  into(ui, buildHelp(ui.helpBtn));
  ui.figuresBox = el("p", "cv-figures", null, { "data-part": "figures" }); /* a lesson's figures: {figures} */
  ui.figuresBox.hidden = true;  /* shown once a lesson's race has ended, right under its panels */
  ui.whyBox = el("p", "cv-why", null, { "data-part": "why" }); /* why fewer passes took longer here: {why} */
  ui.whyBox.hidden = true;
  /* the Play row (scrub) right under the panels, so the first screen shows it */
  [ui.top, ui.progressBanner, ui.passesBanner, ui.legend, ui.sidesBox, ui.figuresBox, ui.scrub, ui.insp, ui.chartBox,
   ui.table, ui.whyBox, ui.help].forEach(function (n) { root.appendChild(n); });
  return ui;
}

/* The caption, origin (a run this server did not make), prompt, status and warning lines above the panels. */
function buildTop() {
  var top = el("div", "cv-top");
  var promptLine = el("p", "cv-prompt");
  promptLine.appendChild(el("span", "cv-label", "Prompt: "));
  var promptText = el("span", "cv-prompt-text");
  promptLine.appendChild(promptText);
  var captionLine = el("p", "cv-caption-line");
  var originLine = el("p", "cv-origin-line");
  originLine.hidden = true;
  var statusLine = el("p", "cv-status", "", { role: "status", "aria-live": "polite" });
  var warningBox = el("div", "cv-warning", null, { role: "alert" });
  warningBox.hidden = true;
  top.appendChild(captionLine);
  top.appendChild(originLine);
  top.appendChild(promptLine);
  top.appendChild(statusLine);
  top.appendChild(warningBox);

  return { top: top, promptLine: promptLine, promptText: promptText, captionLine: captionLine, originLine: originLine,
           statusLine: statusLine, warningBox: warningBox };
}

function buildBanners() {
  var progressBanner = el("p", "cv-progress-banner",
    "Compare by progress \u2014 NOT real time: each side is stretched to the length of its own run " +
    "(0\u2013100 %), so the faster side looks as slow as the slower one. Untick it to see the race as it happened.");
  progressBanner.hidden = true;
  var passesBanner = el("p", "cv-passes-banner", "");
  passesBanner.hidden = true;
  return { progressBanner: progressBanner, passesBanner: passesBanner };
}

function buildLegend() {
  var legend = el("div", "cv-legend", null, { role: "list", "aria-label": "Legend", "data-part": "legend" });
  var legendItems = []; /* every entry, each shown only while what it names occurs in the run (player paintLegend) */
  THEME.legend.forEach(function (name) {
    var st = STYLES[name], masked = st.glyph === "mask";
    var cls = st["class"] + (masked && name !== "masked" ? " " + STYLES.masked["class"] : "") +
      (st["with"] ? " " + STYLES[st["with"]]["class"] : "");
    var item = legendItem(cls, masked ? MASK : THEME.sample, st.label);
    item.setAttribute("role", "listitem");
    item.setAttribute("data-style", name);
    if (ONLY_IF_SEEN[name]) item.hidden = true;
    legendItems.push(item);
    legend.appendChild(item);
  });
  var heatKey = el("span", "cv-legend-item cv-heat-key");
  heatKey.appendChild(el("span", "cv-label", "Heatmap:"));
  THEME.heat_key.forEach(function (x) {
    var box = heatKey.appendChild(el("span", "cv-legend-item", null, { "data-heat": x[0] }));
    var sw = el("span", "cv-swatch", null, { "aria-hidden": "true" });
    sw.style.background = "rgb(" + HEAT[x[0]].join(",") + ")";
    box.appendChild(sw);
    box.appendChild(el("span", "cv-legend-label", x[1]));
    if (ONLY_IF_SEEN[x[0]]) box.hidden = true;
    legendItems.push(box);
  });
  legend.appendChild(heatKey);
  return { legend: legend, legendItems: legendItems, heatKey: heatKey };
}

/* Both side panels: each one's nodes as views[side]. */
function buildSides(inspectHintId) {
  var sidesBox = el("div", "cv-sides");
  var views = {};
  SIDES.forEach(function (s) {
    views[s] = buildSide(s, inspectHintId);
    sidesBox.appendChild(views[s].section);
  });
  return { sidesBox: sidesBox, views: views };
}

/* One side's panel: its head, figures, message, note, text and heatmap, and the state its painting keeps. */
function buildSide(s, inspectHintId) {
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
  var note = el("p", "cv-note", "", { "aria-live": "off" }); /* the shown frame's note, when it has one */
  note.hidden = true;
  var draftNote = el("p", "cv-draft-note", ""); /* a side that started from a draft: what it did with it */
  draftNote.hidden = true;
  /* focusable so the keyboard can inspect positions; never a live region: it changes every frame */
  var text = el("div", "cv-text", null, {
    tabindex: "0", role: "group", "aria-label": sideWord(s) + " output", "aria-live": "off",
    "aria-describedby": inspectHintId,
    "aria-keyshortcuts": "ArrowLeft ArrowRight Shift+ArrowLeft Shift+ArrowRight Escape" });
  var inner = el("div", "cv-text-inner");
  text.appendChild(inner);
  section.appendChild(head);
  section.appendChild(figs);
  section.appendChild(message);
  section.appendChild(note);
  section.appendChild(draftNote);
  section.appendChild(text);
  section.appendChild(el("p", "cv-caption", "Changes per frame (top: first frame)"));
  var hm = buildHeat(s);
  section.appendChild(hm.heatWrap);
  return into({ section: section, name: name, badge: badge, counter: counter, message: message, note: note,
                draftNote: draftNote, text: text,
                inner: inner, elapsed: elapsed, rate: rate, rateLabel: rateLabel, elapsedLabel: elapsedLabel,
                blocks: [], shown: [], shownText: [], shownPre: [], tail: "", lastLen: 0, atEnd: true, pin: false },
              hm);
}

/* One side's heatmap: the canvas, its frame marker and its axes (frames down, first at the top; positions across). */
function buildHeat(s) {
  var heatWrap = el("div", "cv-heat-wrap", null, { "data-part": "heatmap-" + s });
  var heat = el("canvas", "cv-heatmap", null, {
    "data-rows": "0", role: "img",
    "aria-label": sideWord(s) + " changes per frame: rows are frames, first at the top, columns are positions" });
  heat.width = 1; heat.height = 1;
  var marker = el("div", "cv-heat-marker", null, { "aria-hidden": "true" });
  var markerLabel = marker.appendChild(el("span", "cv-heat-marker-label"));
  /* the axes: frames down (labelled by time or passes, first at the top), answer positions across */
  var yAxis = el("div", "cv-heat-y", null, { "aria-hidden": "true" });
  var yTop = yAxis.appendChild(el("span", "cv-heat-tick"));
  var yName = yAxis.appendChild(el("span", "cv-heat-axis-name"));
  var yBottom = yAxis.appendChild(el("span", "cv-heat-tick"));
  var xAxis = el("div", "cv-heat-x", null, { "aria-hidden": "true" });
  var xFirst = xAxis.appendChild(el("span", "cv-heat-tick", "0"));
  var xName = xAxis.appendChild(el("span", "cv-heat-axis-name", "position in the answer \u2192"));
  var xLast = xAxis.appendChild(el("span", "cv-heat-tick"));
  var heatBox = el("div", "cv-heat-box");
  heatBox.appendChild(heat);
  heatBox.appendChild(marker);
  heatWrap.appendChild(yAxis);
  heatWrap.appendChild(heatBox);
  heatWrap.appendChild(xAxis);
  return { heatWrap: heatWrap, heat: heat, heatSrc: document.createElement("canvas"), heatSize: null, heatGen: 0,
           heatOut: "", marker: marker, markerLabel: markerLabel, yTop: yTop, yName: yName, yBottom: yBottom,
           xFirst: xFirst, xLast: xLast, xName: xName, heatLabel: heat.getAttribute("aria-label") };
}

/* The token inspector: one region under the panels. Closed, it is a one-line hint with its own side and
   position pickers; open, it shows one position's history (see paintInspector). */
function buildInspector(inspectHintId) {
  var insp = el("section", "cv-inspector", null, { "data-part": "inspector", "aria-label": "Token inspector",
                                                 "data-open": "false" });
  var inspHead = el("div", "cv-insp-head");
  var inspTitle = el("p", "cv-insp-title", "Token inspector", { "aria-live": "polite" });
  var inspSide = el("select", "cv-insp-side", null, { "aria-label": "Side to inspect" });
  SIDES.forEach(function (s) { inspSide.appendChild(el("option", null, sideWord(s), { value: s })); });
  var inspPosId = freshId("cv-insp-pos-");
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
  return { insp: insp, inspTitle: inspTitle, inspSide: inspSide, inspPos: inspPos, inspClose: inspClose,
           inspHint: inspHint, inspBody: inspBody, inspNow: inspNow, sparkWrap: sparkWrap, spark: spark,
           sparkMarker: sparkMarker, sparkNote: sparkNote, inspEvents: inspEvents, inspNote: inspNote };
}

function buildChart() {
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
  return { chartBox: chartBox, chart: chart, chartNote: chartNote, chartMarker: chartMarker };
}

function buildMetrics() {
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
    if (DRAFT_METRICS[m[0]]) tr.hidden = true; /* only for a race that started from a draft */
    tbody.appendChild(tr);
  });
  table.appendChild(tbody);
  return { table: table, colHeads: colHeads, cells: cells };
}

/* The replay controls: start, previous, play, next, end, the scrubber, speed, pace and the toggles. */
function buildScrub() {
  var scrub = el("div", "cv-scrub", null, { role: "group", "aria-label": "Replay controls",
                                            "data-part": "scrubber" });
  var startBtn = button("cv-btn", "|\u25C0 Start", "Jump to start");
  var prevBtn = button("cv-btn", "\u25C0 Prev", "Previous frame");
  var playBtn = button("cv-btn cv-play", "\u25B6 Play", "Play");
  var nextBtn = button("cv-btn", "Next \u25B6", "Next frame");
  var endBtn = button("cv-btn", "End \u25B6|", "Jump to end");
  var rangeId = freshId("cv-range-");
  var rangeLabel = el("label", "cv-label", "Time", { for: rangeId });
  var range = el("input", "cv-range", null,
                 { type: "range", min: "0", max: "0", step: "1", value: "0", id: rangeId });
  var speedSel = el("select", "cv-speed", null, { "aria-label": "Playback speed", title: "Playback speed (keys 1\u20138)" });
  SPEEDS.forEach(function (v) {
    var o = el("option", null, speedText(v), { value: String(v) });
    if (v === 1) o.selected = true;
    speedSel.appendChild(o);
  });
  var paceId = freshId("cv-pace-");
  var paceLabel = el("label", "cv-label cv-pace-label", "Watch pace", { for: paceId });
  var paceSel = el("select", "cv-speed cv-pace", null, {
    id: paceId, title: "How long a replay of a race of the built-in models lasts on screen (never faster than it ran; " +
      "the clock still shows real time). API races keep their real timing. Remembered in this browser." });
  THEME.paces.forEach(function (v) {
    paceSel.appendChild(el("option", null, paceText(v), { value: String(v) }));
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
  var pickBtn = button("cv-btn cv-pick-btn", "Race / recording\u2026", "Run a race or load a recording (O)");
  pickBtn.hidden = true; /* shown where the page offers a picker (options.onPick) */
  [startBtn, prevBtn, playBtn, nextBtn, endBtn, rangeLabel, range, speedSel, paceLabel, paceSel, timeOut, viewLabel,
   clockBtn, pickBtn, presenterBtn, helpBtn].forEach(function (n) { scrub.appendChild(n); });
  return { scrub: scrub, startBtn: startBtn, prevBtn: prevBtn, playBtn: playBtn, nextBtn: nextBtn, endBtn: endBtn,
           rangeLabel: rangeLabel, range: range, speedSel: speedSel, paceSel: paceSel, timeOut: timeOut,
           viewBox: viewBox, clockBtn: clockBtn, pickBtn: pickBtn, presenterBtn: presenterBtn, helpBtn: helpBtn };
}

/* The keyboard shortcuts' dialog, which `helpBtn` opens. */
function buildHelp(helpBtn) {
  var helpId = freshId("cv-help-");
  var help = el("div", "cv-help", null, { role: "dialog", "aria-modal": "false", "aria-labelledby": helpId + "-t",
                                          id: helpId });
  help.hidden = true;
  helpBtn.setAttribute("aria-controls", helpId);
  var helpCard = el("div", "cv-help-card");
  helpCard.appendChild(el("p", "cv-help-title", "Keyboard shortcuts", { id: helpId + "-t" }));
  var helpList = el("dl", "cv-help-list");
  KEYS.forEach(function (k) {  /* data-key: the player hides a key its page does not offer (O without a picker) */
    helpList.appendChild(el("dt", null, k[0], { "data-key": k[0] }));
    helpList.appendChild(el("dd", null, k[1], { "data-key": k[0] }));
  });
  helpCard.appendChild(helpList);
  var helpClose = button("cv-btn", "Close", "Close the keyboard shortcuts");
  helpCard.appendChild(helpClose);
  help.appendChild(helpCard);
  return { help: help, helpClose: helpClose };
}
