/* Converge player: the convergence chart, both sides on one axis of time or forward passes. */
import { CODE, LINE, SIDES, displayName, gridStyle, hasPasses, isDark, lastRow, setAttr, setText } from "./common.js";

// long: the part's closure: the state its functions share (p: the player's state, nodes and other parts); each
// function within it is held to the limit
export function chartPart(p) {
  var state = p.state, chart = p.ui.chart, chartNote = p.ui.chartNote, chartMarker = p.ui.chartMarker;
  var chartSize = null, chartDrawn = "", chartScale = null;

  function dark() { return isDark(p.root); }

  function resize() { chartSize = null; }

  function paintChart(K) {
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
    var passes = state.view === "passes", lines = chartSeries(passes), series = lines.series, kinds = lines.kinds;
    var tMax = lines.tMax;
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
      stepLine(ctx, x, y, pts, isDark ? LINE[s].dark : LINE[s].color, LINE[s].dash, 2.5);
    });
    drawKept(ctx, x, y, lines.kept, isDark);
    ctx.setLineDash([]);
    chartScale = { x: x, top: padT, height: ph };
    setAttr(chart, "data-kind-left", kinds.left);
    setAttr(chart, "data-kind-right", kinds.right);
    setText(chartNote, chartWords(kinds, passes, lines.off) + (lines.kept.left.length || lines.kept.right.length
      ? " \u00B7 thin dotted: the share of each side's draft still as written (kept from the draft)" : ""));
    setAttr(chart, "aria-label", passes ? "Convergence over forward passes for both sides"
      : "Convergence over time for both sides");
  }

  /* each side's line ([x, share] points) and its kind (settled, live or none: no passes on the pass axis), the
     largest x (at least 1) and the sides left off the pass axis */
  function chartSeries(passes) {
    var denom = Math.max(1, state.sides.left.maxLen, state.sides.right.maxLen);
    var series = {}, kinds = {}, tMax = 0, off = [], kept = {};
    SIDES.forEach(function (s) {
      var side = state.sides[s];
      if (side.settled) { series[s] = side.settled; kinds[s] = "settled"; }
      else { series[s] = liveSeries(side, denom); kinds[s] = "live"; }
      if (passes) {
        if (hasPasses(side) && series[s].length === side.rows.length) series[s] = onPassAxis(side, series[s]);
        else { if (lastRow(side) >= 0) off.push(displayName(side, s)); series[s] = []; kinds[s] = "none"; }
      }
      series[s].forEach(function (p) { if (p[0] > tMax) tMax = p[0]; });
      kept[s] = keptSeries(state.sides[s], passes);
    });
    return { series: series, kinds: kinds, tMax: tMax > 0 ? tMax : 1, off: off, kept: kept };
  }

  /* a side that started from a draft: at each frame, the share of its draft positions holding the draft's own token
     (revision letters k over every letter but "."), on the chart's axis; empty for any other side */
  function keptSeries(side, passes) {
    var out = [];
    side.rows.forEach(function (row) {
      if (!row || !row.rv || (passes && row.nfe == null)) return;
      var kept = 0, of = 0;
      for (var k = 0; k < row.rv.length; k++) {
        if (row.rv[k] !== ".") of++;
        if (row.rv[k] === "k") kept++;
      }
      out.push([passes ? row.nfe : row.t, of ? kept / of : 0]);
    });
    return out;
  }

  function drawKept(ctx, x, y, kept, isDark) {
    /* each revising side's kept share as a thin dotted step line in its colour; the last share in data-draft-SIDE */
    SIDES.forEach(function (s) {
      var pts = kept[s];
      setAttr(chart, "data-draft-" + s, pts.length ? pts[pts.length - 1][1].toFixed(3) : "");
      if (!pts.length) return;
      stepLine(ctx, x, y, pts, isDark ? LINE[s].dark : LINE[s].color, [2, 3], 1.5);
    });
  }

  function stepLine(ctx, x, y, pts, colour, dash, width) {
    /* a step line through pts ([x, y] pairs): a value holds until the next frame */
    ctx.strokeStyle = colour;
    ctx.setLineDash(dash);
    ctx.lineWidth = width;
    ctx.beginPath();
    ctx.moveTo(x(pts[0][0]), y(pts[0][1]));
    for (var i = 1; i < pts.length; i++) {
      ctx.lineTo(x(pts[i][0]), y(pts[i - 1][1]));
      ctx.lineTo(x(pts[i][0]), y(pts[i][1]));
    }
    ctx.stroke();
  }

  /* the note under the chart: what each line is, and the x axis */
  function chartWords(kinds, passes, off) {
    var words = SIDES.filter(function (s) { return kinds[s] !== "none"; }).map(function (s) {
      var name = displayName(state.sides[s], s);
      return (s === "left" ? "solid blue: " : "dashed orange: ") + name + " \u2014 " +
        (kinds[s] === "settled" ? "share of the final answer already in place" :
         "live estimate: committed positions unchanged since the previous frame, over the longest draft so far");
    });
    var axis = passes ? "x axis: forward passes (network calls) since each request was sent, not seconds." +
      (off.length ? " Not on this axis (no forward passes reported): " + off.join(", ") + "." : "")
      : "x axis: real time since each request was sent.";
    return words.concat([axis]).join(" \u00B7 ");
  }

  function liveSeries(side, denom) {
    /* Live estimate: positions committed (unmasked; schema 2: accepted, never noise or a draft) and unchanged
       since the previous frame, over the longest draft so far. */
    var out = [];
    for (var i = 0; i < side.rows.length; i++) {
      var row = side.rows[i];
      if (!row) continue;
      var hits = side.live[i];
      if (hits == null) {
        hits = 0;
        for (var k = 0; k < row.tok.length; k++) {
          if (row.ch && row.ch[k] === CODE.unchanged && !(row.m && row.m[k]) && !(row.st && row.st[k] !== "a") &&
              row.tok[k].trim()) hits++;
        }
        side.live[i] = hits;
      }
      out.push([row.t, denom ? hits / denom : 0]);
    }
    return out;
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

  return { paint: paintChart, resize: resize };
}
