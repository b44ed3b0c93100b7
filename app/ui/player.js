/* Converge player: one client-side renderer for live races, loaded recordings and exported files.
 *
 * Plain browser JavaScript with no dependencies and nothing Gradio-specific:
 *   var player = ConvergePlayer.create(rootElement);
 *   player.update(payload);            // merge an update (live) or a whole run (replay)
 *   ConvergePlayer.mount(root, data);  // the same, in one call, for an exported HTML file
 *
 * Payload (the shape of app.race.Race.snapshot() plus `run` and `seq`):
 *   {run, seq, mode: "live"|"replay"|"message", prompt, recording, done, message,
 *    sides: {left|right: {spec, status, message, start, rows: [row...], metrics?, settled?}}}
 * A row is one frame analysed by app.analysis.SideAnalyzer:
 *   {i, t, step, tok: [str], m: [0|1]|null, ch: [0..3], conf, nfe, final, sp}
 * or the same row compacted by app/ui/payload.py wire_rows: tok holds only the tokens after the first
 * `keep` (shared with the row before), `n` is the length and `cs` the non-zero change codes as
 * [position, code, ...] pairs.
 * Rows are merged by index (`start` + k), so an update may repeat rows it already sent; a new `run`
 * starts over. The root and each side panel carry data-status, data-frames (frames received) and
 * data-step (the frame shown: a side's row index, the root's shared-timeline index); each heatmap
 * canvas carries data-rows (one per frame).
 * Every string from a model, a prompt or a file is written with textContent, never as HTML.
 */
(function (global) {
  "use strict";

  var SIDES = ["left", "right"];
  var MASK = "\u2591";
  var TERMINAL = { done: 1, stopped: 1, error: 1 };
  var STATUS_TEXT = { idle: "idle", waiting: "waiting", running: "running", done: "finished",
                      stopped: "stopped", error: "error" };
  /* Okabe-Ito colours; their lightness steps also read in greyscale:
     empty > masked > unchanged > new > changed > remasked. */
  var HEAT = {
    empty: [255, 255, 255], masked: [236, 236, 236], unchanged: [196, 196, 196],
    fresh: [86, 180, 233], changed: [213, 94, 0], remasked: [0, 0, 0]
  };
  var LINE = { left: { color: "#0072B2", dash: [] }, right: { color: "#E69F00", dash: [7, 4] } };
  var METRICS = [
    ["ttft", "Time to first visible token", seconds],
    ["t_final", "Time to final", seconds],
    ["frames", "Frames", count],
    ["nfe", "Forward passes", count],
    ["tokens_per_s", "Tokens / s", fixed1],
    ["tokens_per_nfe", "Tokens per forward pass", fixed2]
  ];

  function seconds(v) { return v == null ? "\u2014" : v.toFixed(v < 10 ? 3 : 2) + " s"; }
  function count(v) { return v == null ? "\u2014" : String(v); }
  function fixed1(v) { return v == null ? "\u2014" : v.toFixed(1); }
  function fixed2(v) { return v == null ? "\u2014" : v.toFixed(2); }

  function el(tag, cls, text, attrs) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text != null) node.textContent = text;
    if (attrs) for (var k in attrs) node.setAttribute(k, attrs[k]);
    return node;
  }

  function str(v) { return v == null ? "" : String(v); }

  function setText(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function rgba(c) { return (255 << 24 | c[2] << 16 | c[1] << 8 | c[0]) >>> 0; }
  var HEAT32 = {};
  for (var key in HEAT) HEAT32[key] = rgba(HEAT[key]);

  function cellColour(code, masked) {
    if (code === 1) return HEAT32.fresh;
    if (code === 2) return HEAT32.changed;
    if (code === 3) return HEAT32.remasked;
    return masked ? HEAT32.masked : HEAT32.unchanged;
  }

  function newSide() {
    return { spec: "", status: "idle", message: "", rows: [], gaps: 0, metrics: null, settled: null,
             maxLen: 0, heat: null, heatW: 0, heatRows: 0, live: [] };
  }

  function legendItem(cls, sample, label) {
    var item = el("span", "cv-legend-item");
    item.appendChild(el("span", "cv-tok " + cls, sample, { "aria-hidden": "true" }));
    item.appendChild(el("span", "cv-legend-label", label));
    return item;
  }

  function create(root, options) {
    options = options || {};
    var state = { run: null, seq: -1, mode: "live", prompt: "", recording: "", message: "", done: false,
                  sides: {}, cursor: null, playing: false, speed: 1, playT: 0, playLast: 0 };
    SIDES.forEach(function (s) { state.sides[s] = newSide(); });
    var timeline = null;
    var scheduled = false;
    var rafId = 0, timerId = 0;

    root.textContent = "";
    root.classList.add("cv-player");
    var top = el("div", "cv-top");
    var promptLine = el("p", "cv-prompt");
    var promptLabel = el("span", "cv-label", "Prompt: ");
    var promptText = el("span", "cv-prompt-text");
    promptLine.appendChild(promptLabel);
    promptLine.appendChild(promptText);
    var statusLine = el("p", "cv-status", "", { role: "status", "aria-live": "polite" });
    top.appendChild(promptLine);
    top.appendChild(statusLine);

    var legend = el("div", "cv-legend", null, { role: "list", "aria-label": "Legend" });
    [["cv-m", MASK, "masked (not yet decided)"], ["cv-d", "abc", "draft (may still change)"],
     ["cv-n", "abc", "new this frame"], ["cv-c", "abc", "changed this frame"],
     ["cv-r cv-m", MASK, "remasked this frame"], ["", "abc", "unchanged"]].forEach(function (x) {
      var item = legendItem(x[0], x[1], x[2]);
      item.setAttribute("role", "listitem");
      legend.appendChild(item);
    });
    var heatKey = el("span", "cv-legend-item cv-heat-key");
    heatKey.appendChild(el("span", "cv-label", "Heatmap:"));
    [["fresh", "new"], ["changed", "changed"], ["remasked", "remasked"], ["unchanged", "unchanged"],
     ["masked", "masked"]].forEach(function (x) {
      var sw = el("span", "cv-swatch", null, { "aria-hidden": "true" });
      sw.style.background = "rgb(" + HEAT[x[0]].join(",") + ")";
      heatKey.appendChild(sw);
      heatKey.appendChild(el("span", "cv-legend-label", x[1]));
    });
    legend.appendChild(heatKey);

    var sidesBox = el("div", "cv-sides");
    var views = {};
    SIDES.forEach(function (s) {
      var section = el("section", "cv-side", null, { "data-side": s, "data-frames": "0", "data-step": "-1",
                                                     "data-status": "idle", "aria-label": s + " side" });
      var head = el("header", "cv-side-head");
      var name = el("span", "cv-spec", s === "left" ? "Left" : "Right");
      var badge = el("span", "cv-badge", "idle");
      var counter = el("span", "cv-counter", "");
      head.appendChild(el("span", "cv-line-key cv-line-" + s, null, { "aria-hidden": "true" }));
      head.appendChild(name);
      head.appendChild(badge);
      head.appendChild(counter);
      var message = el("p", "cv-message", "", { role: "alert" });
      var text = el("div", "cv-text", null, { "aria-label": s + " output", "aria-live": "off" });
      var heatWrap = el("div", "cv-heat-wrap");
      var heat = el("canvas", "cv-heatmap", null, {
        "data-rows": "0", role: "img", "aria-label": s + " changes per frame: rows are frames, columns are positions" });
      heat.width = 1; heat.height = 1;
      var marker = el("div", "cv-heat-marker", null, { "aria-hidden": "true" });
      heatWrap.appendChild(heat);
      heatWrap.appendChild(marker);
      section.appendChild(head);
      section.appendChild(message);
      section.appendChild(text);
      section.appendChild(el("p", "cv-caption", "Changes per frame (top: first frame)"));
      section.appendChild(heatWrap);
      sidesBox.appendChild(section);
      views[s] = { section: section, name: name, badge: badge, counter: counter, message: message, text: text,
                   heat: heat, marker: marker, spans: [], shown: [] };
    });

    var chartBox = el("div", "cv-chart-box");
    var chartTitle = el("p", "cv-chart-title", "Convergence");
    var chart = el("canvas", "cv-chart", null, { role: "img", "aria-label": "Convergence over time for both sides" });
    var chartNote = el("p", "cv-chart-note", "");
    chartBox.appendChild(chartTitle);
    chartBox.appendChild(chart);
    chartBox.appendChild(chartNote);

    var table = el("table", "cv-metrics");
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

    var scrub = el("div", "cv-scrub", null, { role: "group", "aria-label": "Step through the frames" });
    var prevBtn = el("button", "cv-btn", "\u25C0 Prev", { type: "button", "aria-label": "Previous frame" });
    var playBtn = el("button", "cv-btn", "\u25B6 Play", { type: "button", "aria-label": "Play" });
    var nextBtn = el("button", "cv-btn", "Next \u25B6", { type: "button", "aria-label": "Next frame" });
    var rangeId = "cv-range-" + Math.random().toString(36).slice(2, 9);
    var rangeLabel = el("label", "cv-label", "Time", { for: rangeId });
    var range = el("input", "cv-range", null,
                   { type: "range", min: "0", max: "0", step: "1", value: "0", id: rangeId });
    var speedSel = el("select", "cv-speed", null, { "aria-label": "Playback speed" });
    ["0.25", "0.5", "1", "2", "4"].forEach(function (v) {
      var o = el("option", null, v + "\u00D7", { value: v });
      if (v === "1") o.selected = true;
      speedSel.appendChild(o);
    });
    var timeOut = el("output", "cv-time", "", { for: rangeId });
    [prevBtn, playBtn, nextBtn, rangeLabel, range, speedSel, timeOut].forEach(function (n) { scrub.appendChild(n); });

    root.appendChild(top);
    root.appendChild(legend);
    root.appendChild(sidesBox);
    root.appendChild(scrub);
    root.appendChild(chartBox);
    root.appendChild(table);

    range.addEventListener("input", function () { stopPlaying(); seek(parseInt(range.value, 10)); });
    prevBtn.addEventListener("click", function () { stopPlaying(); seek(cursorIndex() - 1); });
    nextBtn.addEventListener("click", function () { stopPlaying(); seek(cursorIndex() + 1); });
    playBtn.addEventListener("click", function () { state.playing ? stopPlaying() : startPlaying(); });
    speedSel.addEventListener("change", function () { state.speed = parseFloat(speedSel.value) || 1; });
    scrub.addEventListener("keydown", function (e) {
      if (e.target === range || e.target === speedSel) return;
      if (e.key === "ArrowLeft") { stopPlaying(); seek(cursorIndex() - 1); e.preventDefault(); }
      if (e.key === "ArrowRight") { stopPlaying(); seek(cursorIndex() + 1); e.preventDefault(); }
    });

    function reset() {
      stopPlaying();
      state.seq = -1; state.prompt = ""; state.recording = ""; state.message = ""; state.done = false;
      state.cursor = null;
      SIDES.forEach(function (s) { state.sides[s] = newSide(); views[s].shown = []; });
      timeline = null;
    }

    function expand(w, prev) {
      /* A row of our own from a compact row (app/ui/payload.py wire_rows) or a plain analyzer row.
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
      return { i: w.i, t: w.t, step: w.step, tok: tok, m: w.m ? w.m.slice() : null, ch: ch,
               nfe: w.nfe == null ? null : w.nfe, final: !!w.final, sp: w.sp || 0 };
    }

    function mergeSide(side, entry) {
      if (entry.spec != null) side.spec = str(entry.spec);
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
        if (start + k < side.heatRows) side.heatRows = start + k;
      }
      if (entry.metrics) side.metrics = JSON.parse(JSON.stringify(entry.metrics));
      if (entry.settled && entry.settled.length) {
        side.settled = entry.settled.map(function (p) { return [p[0], p[1]]; });
      }
    }

    function update(payload) {
      if (!payload || typeof payload !== "object") return;
      if (payload.run !== state.run) { reset(); state.run = payload.run; }
      if (typeof payload.seq === "number") state.seq = payload.seq;
      if (payload.mode) state.mode = str(payload.mode);
      if (payload.prompt != null) state.prompt = str(payload.prompt);
      if (payload.recording != null) state.recording = str(payload.recording);
      if ("message" in payload) state.message = str(payload.message);
      if (payload.done) state.done = true;
      var sides = payload.sides || {};
      SIDES.forEach(function (s) { if (sides[s]) mergeSide(state.sides[s], sides[s]); });
      if (state.done) SIDES.forEach(function (s) {
        var side = state.sides[s];
        if (!TERMINAL[side.status] && side.status !== "idle") side.status = side.rows.length ? "done" : side.status;
      });
      timeline = null;
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

    function getTimeline() {
      if (timeline) return timeline;
      var ts = [];
      SIDES.forEach(function (s) {
        state.sides[s].rows.forEach(function (r) { if (r) ts.push(r.t); });
      });
      ts.sort(function (a, b) { return a - b; });
      var out = [];
      for (var i = 0; i < ts.length; i++) if (!out.length || ts[i] !== out[out.length - 1]) out.push(ts[i]);
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

    function startPlaying() {
      var tl = getTimeline();
      if (!finished() || !tl.length) return;
      if (cursorIndex() >= tl.length - 1) state.cursor = 0;
      state.playing = true;
      state.playT = tl[cursorIndex()];
      state.playLast = performance.now();
      playBtn.textContent = "\u275A\u275A Pause";
      playBtn.setAttribute("aria-label", "Pause");
      requestAnimationFrame(tick);
    }

    function stopPlaying() {
      if (!state.playing) return;
      state.playing = false;
      playBtn.textContent = "\u25B6 Play";
      playBtn.setAttribute("aria-label", "Play");
    }

    function tick(now) {
      if (!state.playing) return;
      var tl = getTimeline();
      state.playT += (now - state.playLast) / 1000 * state.speed;
      state.playLast = now;
      var i = cursorIndex();
      while (i + 1 < tl.length && tl[i + 1] <= state.playT) i++;
      state.cursor = i;
      paint();
      if (i >= tl.length - 1) { stopPlaying(); return; }
      requestAnimationFrame(tick);
    }

    function rowAt(side, t) {
      /* The last frame of a side at or before time t (null before its first frame). */
      var rows = side.rows, lo = 0, hi = rows.length - 1, best = -1;
      while (lo <= hi) {
        var mid = (lo + hi) >> 1;
        var r = rows[mid];
        if (r && r.t <= t) { best = mid; lo = mid + 1; } else if (r) { hi = mid - 1; } else { lo = mid + 1; }
      }
      while (best >= 0 && !rows[best]) best--;
      return best;
    }

    function lastRow(side) {
      for (var i = side.rows.length - 1; i >= 0; i--) if (side.rows[i]) return i;
      return -1;
    }

    function paint() {
      var done = finished();
      var tl = getTimeline();
      var scrubbing = done && state.cursor != null && tl.length > 0;
      var T = scrubbing ? tl[cursorIndex()] : null;
      var total = 0;
      var anyRunning = false, anyStopped = false, anyError = false, anyDone = false;
      SIDES.forEach(function (s) {
        var side = state.sides[s];
        var idx = T == null ? lastRow(side) : rowAt(side, T);
        paintSide(s, side, idx, done, scrubbing);
        total += side.rows.length;
        if (side.status === "running" || side.status === "waiting") anyRunning = true;
        if (side.status === "stopped") anyStopped = true;
        if (side.status === "error") anyError = true;
        if (side.status === "done") anyDone = true;
      });
      var overall = state.run == null || state.mode === "message" ? "idle" : !done ? "running" : anyStopped ? "stopped"
        : anyError && !anyDone ? "error" : "done";
      root.setAttribute("data-status", overall);
      root.setAttribute("data-frames", String(total));
      root.setAttribute("data-step", String(tl.length ? cursorIndex() : -1));
      root.setAttribute("data-run", str(state.run));
      root.setAttribute("data-mode", state.mode);
      setText(promptText, state.prompt);
      promptLine.hidden = !state.prompt;
      var status = state.message;
      if (!status) {
        if (overall === "idle") status = "Choose two sources, type a prompt and press Run, or load a recording.";
        else if (overall === "running") status = anyRunning ? "Racing\u2026" : "Finishing\u2026";
        else if (overall === "stopped") status = "Stopped: the frames so far are kept.";
        else if (overall === "error") status = "Both sides failed; see each side's message.";
        else status = state.mode === "replay" ? "Recording loaded." : "Finished.";
        if (state.recording && overall !== "idle") {
          status += (overall === "running" ? " Recording to " : state.mode === "replay" ? " File: " : " Saved as ") +
            state.recording + ".";
        }
      }
      setText(statusLine, status);
      paintScrub(done, tl);
      paintChart(T, done);
      paintMetrics();
    }

    function paintSide(s, side, idx, done, scrubbing) {
      var v = views[s];
      v.section.setAttribute("data-status", side.status);
      v.section.setAttribute("data-frames", String(side.rows.length));
      v.section.setAttribute("data-step", String(idx));
      setText(v.name, side.spec || (s === "left" ? "Left" : "Right"));
      setText(v.badge, STATUS_TEXT[side.status] || side.status);
      v.badge.className = "cv-badge cv-st-" + (STATUS_TEXT[side.status] ? side.status : "other");
      setText(v.counter, side.rows.length ? "frame " + (idx + 1) + " / " + side.rows.length : "");
      setText(v.message, side.message);
      v.message.hidden = !side.message;
      setText(colHeads[s], side.spec || s);
      var row = idx >= 0 ? side.rows[idx] : null;
      paintTokens(v, row, side, idx, done);
      paintHeat(v, side, scrubbing ? idx : -1);
    }

    function paintTokens(v, row, side, idx, done) {
      var tok = row ? row.tok : [];
      var m = row && row.m, ch = row && row.ch;
      var settledAll = done && side.status === "done" && idx === side.rows.length - 1;
      var sp = row && typeof row.sp === "number" ? row.sp : 0;
      var textSource = row && !m;
      var spans = v.spans, shown = v.shown;
      while (spans.length < tok.length) {
        var span = el("span", "cv-tok");
        spans.push(span);
        v.text.appendChild(span);
      }
      while (spans.length > tok.length) {
        v.text.removeChild(spans.pop());
        shown.length = spans.length;
      }
      for (var i = 0; i < tok.length; i++) {
        var span = spans[i];
        var masked = !!(m && m[i]);
        var code = ch ? ch[i] : 0;
        var text = masked ? MASK : tok[i];
        var cls = "cv-tok";
        if (masked) cls += " cv-m";
        if (code === 1) cls += " cv-n";
        else if (code === 2) cls += " cv-c";
        else if (code === 3) cls += " cv-r";
        else if (textSource && !settledAll && i >= sp) cls += " cv-d";
        var sig = cls + "\u0000" + text;
        if (shown[i] !== sig) {
          setText(span, text);
          span.className = cls;
          shown[i] = sig;
        }
      }
      v.text.setAttribute("data-tokens", String(tok.length));
    }

    function paintHeat(v, side, idx) {
      /* idx: the frame to mark while scrubbing, -1 for none */
      var rows = side.rows, n = rows.length, w = Math.max(1, side.maxLen);
      var canvas = v.heat;
      if (!n) {
        if (canvas.width !== 1 || canvas.height !== 1) { canvas.width = 1; canvas.height = 1; }
        canvas.getContext("2d").clearRect(0, 0, 1, 1);
        canvas.setAttribute("data-rows", "0");
        v.marker.hidden = true;
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
      if (canvas.width !== w) canvas.width = w;
      if (canvas.height !== n) canvas.height = n;
      var image = new ImageData(new Uint8ClampedArray(buf32.buffer, 0, w * n * 4), w, n);
      canvas.getContext("2d").putImageData(image, 0, 0);
      canvas.setAttribute("data-rows", String(n));
      canvas.setAttribute("data-cols", String(w));
      /* crisp cells while each frame gets at least a pixel; smoothed (averaged) when squeezed */
      var crisp = n <= canvas.clientHeight && w <= canvas.clientWidth;
      canvas.style.imageRendering = crisp ? "pixelated" : "auto";
      v.marker.hidden = idx < 0;
      if (idx >= 0) v.marker.style.top = ((idx + 0.5) / n * 100) + "%";
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

    function paintChart(T, done) {
      var dpr = global.devicePixelRatio || 1;
      var cssW = chart.clientWidth || 600, cssH = chart.clientHeight || 180;
      var W = Math.round(cssW * dpr), H = Math.round(cssH * dpr);
      if (chart.width !== W) chart.width = W;
      if (chart.height !== H) chart.height = H;
      var ctx = chart.getContext("2d");
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, cssW, cssH);
      var denom = Math.max(1, state.sides.left.maxLen, state.sides.right.maxLen);
      var series = {}, kinds = {}, tMax = 0;
      SIDES.forEach(function (s) {
        var side = state.sides[s];
        if (side.settled) { series[s] = side.settled; kinds[s] = "settled"; }
        else { series[s] = liveSeries(side, denom); kinds[s] = "live"; }
        series[s].forEach(function (p) { if (p[0] > tMax) tMax = p[0]; });
      });
      tMax = tMax > 0 ? tMax : 1;
      var padL = 42, padR = 10, padT = 8, padB = 26;
      var pw = cssW - padL - padR, ph = cssH - padT - padB;
      var x = function (t) { return padL + t / tMax * pw; };
      var y = function (f) { return padT + (1 - f) * ph; };
      ctx.font = "11px system-ui, sans-serif";
      ctx.fillStyle = "#444";
      ctx.strokeStyle = "#bbb";
      ctx.lineWidth = 1;
      ctx.setLineDash([]);
      ctx.beginPath();
      [0, 0.5, 1].forEach(function (f) {
        ctx.moveTo(padL, y(f) + 0.5); ctx.lineTo(padL + pw, y(f) + 0.5);
        ctx.fillText(Math.round(f * 100) + "%", 4, y(f) + 4);
      });
      ctx.stroke();
      var step = niceStep(tMax);
      var digits = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
      for (var t = 0; t <= tMax + 1e-9; t += step) {
        ctx.fillText(t.toFixed(digits) + " s", x(t) - 10, cssH - 8);
      }
      SIDES.forEach(function (s) {
        var pts = series[s];
        if (!pts.length) return;
        ctx.strokeStyle = LINE[s].color;
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
      if (T != null) {
        ctx.strokeStyle = "#000";
        ctx.lineWidth = 1;
        ctx.beginPath();
        ctx.moveTo(x(T) + 0.5, padT); ctx.lineTo(x(T) + 0.5, padT + ph);
        ctx.stroke();
      }
      chart.setAttribute("data-kind-left", kinds.left);
      chart.setAttribute("data-kind-right", kinds.right);
      var words = SIDES.map(function (s) {
        var name = state.sides[s].spec || s;
        return (s === "left" ? "solid blue: " : "dashed orange: ") + name + " \u2014 " +
          (kinds[s] === "settled" ? "share of the final answer already in place" :
           "live estimate: committed positions unchanged since the previous frame, over the longest draft so far");
      });
      setText(chartNote, words.join(" \u00B7 "));
    }

    function niceStep(tMax) {
      var raw = tMax / 6, pow = Math.pow(10, Math.floor(Math.log10(raw)));
      var n = raw / pow;
      return (n < 1.5 ? 1 : n < 3.5 ? 2 : n < 7.5 ? 5 : 10) * pow;
    }

    function paintMetrics() {
      SIDES.forEach(function (s) {
        var side = state.sides[s], m = side.metrics;
        METRICS.forEach(function (def) {
          var cell = cells[def[0]][s];
          var text;
          if (m) text = def[2](m[def[0]]);
          else if (def[0] === "frames") text = side.rows.length ? String(side.rows.length) : "\u2014";
          else text = side.status === "running" ? "\u2026" : "\u2014";
          setText(cell, text);
        });
      });
    }

    function paintScrub(done, tl) {
      var enabled = done && tl.length > 0;
      [prevBtn, playBtn, nextBtn, range, speedSel].forEach(function (n) { n.disabled = !enabled; });
      scrub.setAttribute("data-enabled", enabled ? "true" : "false");
      range.max = String(Math.max(0, tl.length - 1));
      var i = tl.length ? cursorIndex() : 0;
      if (range.value !== String(i)) range.value = String(i);
      setText(timeOut, !tl.length ? ""
        : enabled ? "t = " + tl[i].toFixed(3) + " s (" + (i + 1) + " / " + tl.length + ")"
        : "live \u2014 the timeline opens when the run ends");
    }

    paint();
    var api = { update: update, reset: function () { state.run = null; reset(); schedule(); }, root: root,
                state: state, paint: paint };
    root.convergePlayer = api; /* for tests and the browser console */
    return api;
  }

  function mount(root, data) {
    var player = create(root);
    player.update(data);
    return player;
  }

  global.ConvergePlayer = { create: create, mount: mount, version: 1 };
})(typeof window !== "undefined" ? window : this);
