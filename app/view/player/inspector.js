/* Converge player: the token inspector, one position's history (events, confidence sparkline, candidates). */
import { BLOCK, CODE, CODE_HEAT, HEAT, HOVER_MS, LINE, MAX_EVENTS, REV_WORDS, SIDES, SPARK, SPARK_PAD, STATE_WORDS,
  STYLES, displayName, el, gridStyle, isDark, lineColumns, quoted, setAttr, setText, sideWord, themeColour
} from "./common.js";

var GONE = CODE_HEAT.length;  /* an event past the change codes: the frame deleted the position */
/* what an event did, by its code (app/analysis/states.py CODE_NAMES) */
var EVENT_WORDS = {};
EVENT_WORDS[CODE.changed] = "changed"; EVENT_WORDS[CODE.remasked] = "remasked"; EVENT_WORDS[CODE.edited] = "edited";
EVENT_WORDS[CODE.renoised] = "re-noised"; EVENT_WORDS[CODE.inserted] = "inserted"; EVENT_WORDS[GONE] = "deleted";

// long: the part's closure: the state its functions share (p: the player's state, nodes and other parts); each
// function within it is held to the limit
export function inspectorPart(p) {
  var state = p.state, views = p.ui.views, schedule = p.schedule, ui = p.ui;
  var insp = ui.insp, inspTitle = ui.inspTitle, inspSide = ui.inspSide, inspPos = ui.inspPos, inspClose = ui.inspClose;
  var inspHint = ui.inspHint, inspBody = ui.inspBody, inspNow = ui.inspNow, sparkWrap = ui.sparkWrap, spark = ui.spark;
  var sparkMarker = ui.sparkMarker, sparkNote = ui.sparkNote, inspEvents = ui.inspEvents, inspNote = ui.inspNote;
  var inspSig = "", inspHistory = null, revealSel = false;

  function dark() { return isDark(p.root); }

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
      at -= (v.shownPre[i] || "").length + v.shownText[i].length;
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
    /* on a side whose frames insert and delete positions, p is the position in the frame shown when it was picked,
       followed from there through every frame (history) */
    var sig = [state.run, ins.side, p, side.rows.length, side.status, dark(), global.devicePixelRatio || 1].join("|");
    if (sig !== inspSig) {
      inspHistory = history(side, p, views[ins.side].idx);
      listEvents(inspHistory, side);
      drawSpark(inspHistory, ins.side, p);
      inspSig = sig;
    }
    paintNow(side, views[ins.side].idx, p);
    if (revealSel && views[ins.side].selNode) views[ins.side].selNode.scrollIntoView({ block: "nearest" });
    revealSel = false;
  }

  function history(side, p, idx) {
    /* One pass over the rows: position p's confidence at each frame, whether it was masked, and its events
       (a change code at p, or candidates recorded for p); on a side whose frames insert and delete positions, p is
       the shown frame's position, followed to its place in every frame (positionsOf). */
    var rows = side.rows, conf = [], masked = [], events = [], hasConf = false, masks = false;
    var at = positionsOf(side, p, idx);
    for (var r = 0; r < rows.length; r++) {
      var row = rows[r], q = at[r];
      var here = row && q >= 0 && q < row.tok.length;
      var value = here && row.cf && q < row.cf.length ? row.cf[q] : -1;
      if (row && row.cf) hasConf = true;
      if (row && row.m) masks = true;
      conf.push(value);
      masked.push(here && row.m ? row.m[q] : 0);
      if (!row) continue;
      if (q === -2) {
        var before = rows[r - 1];
        events.push({ r: r, code: GONE, cands: null, at: -1, tok: before && at[r - 1] >= 0 ? before.tok[at[r - 1]] : null });
        continue;
      }
      var cands = null;
      if (row.cd) for (var k = 0; k < row.cd.length; k++) if (row.cd[k][0] === q) cands = row.cd[k][1];
      var code = here && q < row.ch.length ? row.ch[q] : 0;
      var tok = here && code !== CODE.remasked && !(row.m && row.m[q]) ? row.tok[q] : null;
      if (code || cands) events.push({ r: r, code: code, cands: cands, at: q, tok: tok });
    }
    var h = { conf: conf, masked: masked, events: events, hasConf: hasConf, masks: masks, at: at };
    return draftStart(h, side.draft, at.length ? at[0] : -1);
  }

  function draftStart(h, draft, first) {
    /* a side that started from a draft: the position's history starts at its draft token (the position it has in
       the first frame), kept as written or re-noised */
    h.draft = draft && first >= 0 && first < draft.tokens.length ? draft.tokens[first] : null;
    h.reopened = !!(draft && draft.renoised[first]);
    return h;
  }

  function positionsOf(side, p, idx) {
    /* per row, where position p of frame idx is: p itself, or on a side whose frames insert and delete positions the
       position in its heatmap column (lineColumns), -1 where that frame does not have it and -2 where it deleted it */
    var rows = side.rows, out = [], lay = side.seen.aligned ? lineColumns(rows) : null;
    var col = lay && idx >= 0 && lay.cols[idx] ? lay.cols[idx][p] : null;
    for (var r = 0; r < rows.length; r++) {
      if (col == null) { out.push(p); continue; }
      var q = lay.cols[r] ? lay.cols[r].indexOf(col) : -1;
      out.push(q < 0 && lay.gone[r] && lay.gone[r].indexOf(col) >= 0 ? -2 : q);
    }
    return out;
  }

  function listEvents(h, side) {
    var items = h.draft != null ? [draftItem(h)] : [], commits = 0;
    for (var k = 0; k < h.events.length && items.length < MAX_EVENTS; k++) {
      var e = h.events[k], row = side.rows[e.r];
      var word = e.code === CODE["new"] ? (row.st ? (row.st[e.at] === "d" ? "drafted" : "accepted")
                                 : h.masks ? (commits++ ? "re-committed" : "committed") : "appeared")
        : EVENT_WORDS[e.code] || "weighed";
      if (e.code === CODE["new"] && row.by) word += row.by === "user" ? " by you" : " by the model";
      var li = el("li", "cv-insp-event", null, { "data-code": String(e.code) });
      li.appendChild(el("span", "cv-insp-when", "step " + row.step + " \u00B7 frame " + (e.r + 1) + " \u00B7 t = " +
        row.t.toFixed(3) + " s"));
      li.appendChild(document.createTextNode(" " + word + " "));
      if (e.tok != null) li.appendChild(el("span", "cv-insp-tok", quoted(e.tok)));
      if (e.cands && e.cands.length) {
        li.appendChild(document.createTextNode(e.code === CODE.remasked ? " \u2014 its top candidates then: "
                                                            : " \u2014 top candidates: "));
        e.cands.forEach(function (c, i) {
          if (i) li.appendChild(document.createTextNode(", "));
          li.appendChild(el("span", "cv-insp-tok", quoted(c[0])));
          li.appendChild(document.createTextNode(" " + c[1] + " %"));
        });
      }
      var en = entropyAt(row, e.at);
      if (en) li.appendChild(document.createTextNode(" \u00B7 " + en));
      items.push(li);
    }
    if (h.events.length > k) items.push(el("li", "cv-insp-more", "\u2026 and " + (h.events.length - k) + " more (not listed)"));
    if (!items.length) items.push(el("li", "cv-insp-more", "No change at this position yet."));
    inspEvents.replaceChildren.apply(inspEvents, items);
    inspNote.hidden = h.hasConf;
    setText(inspNote, "This source reports no confidences (API sources do not), so there is no confidence line " +
      "and there are no candidates: the list shows when this position changed.");
    sparkWrap.hidden = sparkNote.hidden = !h.hasConf;
  }

  function draftItem(h) {
    /* the first line of a revising side's history: the position's draft token, kept as written or re-noised */
    var li = el("li", "cv-insp-event", null, { "data-code": "draft" });
    li.appendChild(el("span", "cv-insp-when", "before the run"));
    li.appendChild(document.createTextNode(" the draft's "));
    li.appendChild(el("span", "cv-insp-tok", quoted(h.draft)));
    li.appendChild(document.createTextNode(h.reopened ? ", re-noised at the start" : ", kept as written"));
    return li;
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
      var colour = HEAT[e.code === GONE ? "deleted" : CODE_HEAT[e.code] || "unchanged"];
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
      "dots: committed (sky blue), changed (vermillion), remasked (black)" +
      (state.sides[s].seen.st2 ? ", edited (yellow), re-noised (dark blue), inserted " +
       "(dark purple), deleted (dark green)" : "") + ", as in the heatmap; " +
      "the line is the frame shown.");
  }

  function sparkX(r, n) {
    return SPARK_PAD[0] + (n > 1 ? r / (n - 1) : 0.5) * (SPARK[0] - SPARK_PAD[0] - SPARK_PAD[1]);
  }

  function entropyAt(row, p) {
    /* "entropy 1.23 nats" for position p of a row whose source reports entropies, "" where it predicted nothing */
    var e = row && row.en && p >= 0 && p < row.en.length ? row.en[p] : null;
    return e == null ? "" : "entropy " + e.toFixed(2) + " nats";
  }

  function revWords(row, p) {
    /* " · kept from the draft", " · edited from the draft (...) · the draft had “x”", " · re-noised ..." where the
       row carries revision letters */
    var letter = row.rv && p < row.rv.length ? row.rv[p] : "";
    if (!REV_WORDS[letter]) return "";
    var had = letter === "e" && inspHistory && inspHistory.draft != null;
    return " \u00B7 " + REV_WORDS[letter] + (had ? " \u00B7 the draft had " + quoted(inspHistory.draft) : "");
  }

  function sparkY(v) { return 4 + (1 - v / 100) * (SPARK[1] - 8); }

  function paintNow(side, idx, p) {
    /* the inspected position at the frame shown (per frame: a line of text and the marker's place) */
    var row = idx >= 0 ? side.rows[idx] : null, text;
    if (inspHistory && idx >= 0 && idx < inspHistory.at.length) p = inspHistory.at[idx] < 0 ? Infinity : inspHistory.at[idx];
    if (!row) text = "Before this side's first frame.";
    else {
      text = "Frame " + (idx + 1) + " / " + side.rows.length + " (step " + row.step + ", t = " +
        row.t.toFixed(3) + " s): ";
      if (p >= row.tok.length) text += "not produced yet.";
      else {
        var masked = row.m && row.m[p];
        var cf = row.cf && p < row.cf.length ? row.cf[p] : -1;
        text += masked ? "masked" : quoted(row.tok[p]);
        if (row.st && !masked) text += " \u00B7 " + (STATE_WORDS[row.st[p]] || "");
        text += revWords(row, p);
        if (side.pinned && side.pinned[p]) text += " \u00B7 " + STYLES.pinned.label;
        else if (cf >= 0) text += (masked ? " \u00B7 top candidate at " : " \u00B7 confidence ") + cf + " %";
        var en = entropyAt(row, p);
        if (en) text += " \u00B7 " + en;
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

  return { paint: paintInspector, close: closeInspector };
}
