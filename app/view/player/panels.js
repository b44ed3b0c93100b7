/* Converge player: each side's panel (title, badge, figures, text) and heatmap, and the metrics table. */
import { BLOCK, DELETED_CLASS, DRAFT, DRAFT_METRICS, HEAT32, HEAT_RANK, MASK, METRICS, MIN_ROW, NOISE, PINNED, SEL,
  CODE, SIDES, STATUS_TEXT, TOKEN_CLASS, cellColour, counted, displayName, el, lastRow, lineColumns, revBits, setAttr,
  setText, sideWord, str, unitCount, visibleCount
} from "./common.js";

// long: the part's closure: the state its functions share (p: the player's state, nodes and other parts); each
// function within it is held to the limit
export function panelsPart(p) {
  var state = p.state, views = p.ui.views, colHeads = p.ui.colHeads, cells = p.ui.cells;
  var onPasses = p.timeline.onPasses;

  function paintSide(s, side, idx, done, scrubbing, K) {
    var v = views[s];
    setAttr(v.section, "data-status", side.status);
    setAttr(v.section, "data-frames", String(side.rows.length));
    setAttr(v.section, "data-step", String(idx));
    var name = displayName(side, s);
    setText(v.name, name);
    setAttr(v.section, "aria-label", sideWord(s) + " panel: " + name);
    setAttr(v.text, "aria-label", sideWord(s) + " output: " + name);
    var key = badgeKey(side, idx, done, scrubbing);
    setText(v.badge, STATUS_TEXT[key] || key);
    setAttr(v.section, "data-badge", key);
    var badgeClass = "cv-badge cv-st-" + (STATUS_TEXT[key] ? key : "other");
    if (v.badge.className !== badgeClass) v.badge.className = badgeClass;
    setText(v.counter, side.rows.length ? "frame " + (idx + 1) + " / " + side.rows.length : "");
    setText(v.message, side.message);
    v.message.hidden = !side.message;
    setText(colHeads[s], name);
    var row = idx >= 0 ? side.rows[idx] : null;
    paintFigures(v, side, row, idx, K);
    var note = row ? row.note : "";
    setText(v.note, note);
    if (v.note.hidden !== !note) v.note.hidden = !note;
    var draftLine = side.draft ? side.draft.line : ""; /* a side that started from a draft: what it did with it */
    setText(v.draftNote, draftLine);
    if (v.draftNote.hidden !== !draftLine) v.draftNote.hidden = !draftLine;
    setAttr(v.draftNote, "data-mode", side.draft ? side.draft.mode : "");
    v.idx = idx;
    paintTokens(v, row, side, idx, done, state.inspect && state.inspect.side === s ? state.inspect.pos : -1);
    paintHeat(v, side, scrubbing ? idx : -1);
  }

  function badgeKey(side, idx, done, scrubbing) {
    /* what the side is doing on screen: while a replay is scrubbed or played, ready (nothing played yet), playing,
       paused, or how it ended once its last frame is shown; live, its own status */
    if (!done || !scrubbing || !side.rows.length || idx >= lastRow(side)) return side.status;
    if (state.playing) return "playing";
    return p.timeline.cursorIndex() === 0 ? "ready" : "paused";
  }

  function paintFigures(v, side, row, idx, K) {
    /* elapsed: on the shared timeline, the race clock (the time of the frame the timeline is at, from
       either side) until this side's last frame, then that frame's t; otherwise the shown frame's own t.
       rate: tokens of the final answer already in place at the shown frame (the settled share of the answer's
       length in the metrics' unit, as in the video export and the metrics table), or while live the visible
       tokens, over elapsed. */
    var last = lastRow(side);
    if (last < 0) { setText(v.elapsed, "\u2014"); setText(v.rate, "\u2014"); return; }
    if (onPasses(side)) { paintPassFigures(v, side, row, idx, K, last); return; }
    setText(v.elapsedLabel, state.view === "passes" ? "elapsed (reports no forward passes)" : "elapsed");
    var t = row ? row.t : 0;
    if (K != null && state.view === "time") t = Math.min(K, side.rows[last].t);
    var tok = tokensAt(side, row, idx);
    setText(v.elapsed, t.toFixed(2) + " s");
    setText(v.rate, t > 0 ? (tok.n / t).toFixed(1) : "\u2014");
    setText(v.rateLabel, tok.settled ? "tokens / s (" + tok.unit + " in place)" : "tokens / s (visible, live)");
  }

  function tokensAt(side, row, idx) {
    /* tokens of the final answer already in place at frame idx, counted as the metrics count the answer (its
       answer_tokens, in its token_unit: an AR model's pieces make one a pass), or while live the visible tokens */
    var m = side.metrics;
    var settled = side.settled && m && side.settled.length === side.rows.length;
    var total = settled ? (m.answer_tokens != null ? m.answer_tokens : m.tokens) : 0;
    return { n: !row ? 0 : settled ? Math.round(side.settled[idx][1] * total) : visibleCount(row),
             settled: settled, unit: settled && m.token_unit ? unitName(m.token_unit) : "final tokens" };
  }

  function unitName(unit) {
    /* the metrics' unit, short enough for a figure's label: "tokenizer pieces", "completion_tokens" */
    return str(unit).split(" (")[0];
  }

  function paintPassFigures(v, side, row, idx, K, last) {
    /* on the forward-pass clock: passes so far (the timeline's count until this side's last frame, then its
       own) and tokens per pass; counts, never seconds */
    var n = row && row.nfe != null ? row.nfe : 0;
    if (K != null) n = Math.min(K, side.rows[last].nfe);
    var tok = tokensAt(side, row, idx);
    setText(v.elapsed, counted(n, "pass", "passes"));
    setText(v.elapsedLabel, "forward passes");
    setText(v.rate, n > 0 ? (tok.n / n).toFixed(2) : "\u2014");
    setText(v.rateLabel, tok.settled ? "tokens / pass (" + tok.unit + " in place)" : "tokens / pass (visible, live)");
  }

  function paintTokens(v, row, side, idx, done, sel) {
    /* Each position's style and text are compared with what is on screen; only the blocks holding a
       difference are rebuilt. Within a block, neighbours with the same style share one node (a plain text
       node when unstyled), so a 1,000-token panel is a few hundred inline boxes instead of a thousand and
       the browser's text layout and paint, which grow with that count, stay cheap. */
    var tok = row ? row.tok : [];
    var m = row && row.m, ch = row && row.ch, states = row && row.st, letters = row && row.rv;
    var pre = deletedBefore(row), tail = pre[tok.length] || "";
    var settledAll = done && side.status === "done" && idx === side.rows.length - 1;
    var sp = row && typeof row.sp === "number" ? row.sp : 0;
    var textSource = row && !m;
    var n = tok.length, shown = v.shown, shownText = v.shownText, shownPre = v.shownPre, blocks = v.blocks;
    var nBlocks = Math.ceil(n / BLOCK);
    while (blocks.length < nBlocks) blocks.push(v.inner.appendChild(el("span", "cv-blk")));
    while (blocks.length > nBlocks) v.inner.removeChild(blocks.pop());
    var dirty = [], cut = shown.length > n && n % BLOCK;
    shown.length = Math.min(shown.length, n);
    shownText.length = shownPre.length = shown.length;
    var draftFrom = textSource && !settledAll ? sp : n;
    var pinned = side.pinned;
    for (var i = 0; i < n; i++) {
      var masked = m && m[i] ? 1 : 0;
      var code = ch ? ch[i] : 0;
      /* app/view/side.py cell_style's rule as bits (TOKEN_CLASS): computed here, as it hangs on what only the
         browser knows, the inspected position and whether the row shown is a finished side's last */
      var state = states ? states[i] : "";
      var draft = code === CODE.unchanged && (states ? state === "d" : i >= draftFrom) ? DRAFT : 0;
      var rev = letters ? revBits(letters[i], code, masked || state === "n" || draft) : 0;
      var style = (pinned && pinned[i] ? PINNED : masked | code << 1 | draft | (state === "n" ? NOISE : 0) | rev) |
        (i === sel ? SEL : 0);
      var text = masked ? MASK : tok[i], gone = pre[i] || "";
      if (shown[i] !== style || shownText[i] !== text || (shownPre[i] || "") !== gone) {
        shown[i] = style;
        shownText[i] = text;
        shownPre[i] = gone;
        var b = (i / BLOCK) | 0;
        if (dirty[dirty.length - 1] !== b) dirty.push(b);
      }
    }
    if ((cut || v.tail !== tail) && nBlocks && dirty[dirty.length - 1] !== nBlocks - 1) dirty.push(nBlocks - 1);
    v.tail = tail;
    for (var k = 0; k < dirty.length; k++) fillBlock(v, dirty[k], n);
    setAttr(v.text, "data-tokens", String(n));
    /* the newest change stays in view (applied after all writes, see follow): a diffusion side's last position
       changed at this frame, a typing side's end while it was scrolled there or the timeline moves it */
    var newest = -1;
    if (dirty.length) {
      if (textSource) newest = (v.atEnd || done) && n ? n - 1 : -1;
      else if (ch) for (var q = n - 1; q >= 0; q--) if (ch[q]) { newest = q; break; }
    }
    v.follow = newest;
    v.lastLen = n;
  }

  function fillBlock(v, b, n) {
    /* Rebuilds one block's runs, keeping each node already in place that has the run's style (only its text
       may change), so a frame that highlights one token touches a node or two rather than the whole block. */
    var from = b * BLOCK, to = Math.min(n, from + BLOCK), block = v.blocks[b], child = block.firstChild;
    for (var i = from; i <= to;) {
      /* the tokens this frame deleted, struck through where they were (after the last position: the tail) */
      var gone = i < to ? v.shownPre[i] : to === n ? v.tail : "";
      if (gone) child = putRun(block, child, DELETED_CLASS, gone).nextSibling;
      if (i === to) break;
      var style = v.shown[i], text = v.shownText[i], j = i + 1;
      for (; j < to && v.shown[j] === style && !v.shownPre[j]; j++) text += v.shownText[j];
      var node = child;
      if (node && (style ? node.nodeType === 1 && node.className === TOKEN_CLASS[style] : node.nodeType === 3)) {
        setRunText(node, text);
        child = node.nextSibling;
      } else {
        node = style ? el("span", TOKEN_CLASS[style], text) : document.createTextNode(text);
        block.insertBefore(node, child);
      }
      if (style & SEL) v.selNode = node;
      i = j;
    }
    while (child) {
      var next = child.nextSibling;
      block.removeChild(child);
      child = next;
    }
  }

  function putRun(block, child, cls, text) {
    /* a styled run before `child`, reusing `child` when it has that class; returns the run's node */
    if (child && child.nodeType === 1 && child.className === cls) { setRunText(child, text); return child; }
    return block.insertBefore(el("span", cls, text), child);
  }

  function deletedBefore(row) {
    /* a schema 2 row's deleted tokens by the position they stand before (the row's length: after the last) */
    var out = [];
    if (row && row.dl) row.dl.forEach(function (d) { out[d[1]] = (out[d[1]] || "") + d[2]; });
    return out;
  }

  function follow(v) {
    /* Scrolls a panel, by whole lines, so the line block holding its newest change is in view; the box is a whole
       number of lines tall (player.css), so no line is cut in half. Reads layout: call after every write. */
    var pos = v.follow;
    v.follow = -1;
    if (pos == null || pos < 0) return;
    var block = v.blocks[(pos / BLOCK) | 0];
    var t = v.text;
    if (!block || t.scrollHeight <= t.clientHeight) { if (t.scrollTop) t.scrollTop = 0; return; }
    var rects = block.getClientRects();
    if (!rects.length) return;
    var cs = getComputedStyle(t), lh = parseFloat(cs.lineHeight), pad = parseFloat(cs.paddingTop) || 0;
    if (!(lh > 0)) return;
    var box = t.getBoundingClientRect(), top0 = box.top + t.clientTop + pad - t.scrollTop;
    var last = rects[rects.length - 1], first = rects[0];
    var lastLine = Math.max(0, Math.round((last.bottom - top0) / lh) - 1);
    var firstLine = Math.max(0, Math.min(lastLine, Math.round((first.top - top0) / lh)));
    var lines = Math.max(1, Math.floor((t.clientHeight - 2 * pad) / lh + 0.01));
    var from = Math.round(t.scrollTop / lh);
    if (lastLine >= from + lines) from = lastLine - lines + 1;
    if (firstLine < from) from = firstLine;
    var want = Math.round(from * lh);
    if (Math.abs(t.scrollTop - want) >= 1) t.scrollTop = want;
  }

  function setRunText(node, text) {
    /* through the text node's data where there is one: the browser then reshapes only what changed */
    var t = node.nodeType === 3 ? node : node.firstChild;
    if (t && t.nodeType === 3 && !t.nextSibling) { if (t.data !== text) t.data = text; }
    else if (node.textContent !== text) node.textContent = text;
  }

  function paintHeat(v, side, idx) {
    /* idx: the frame to mark while scrubbing, -1 for none. New rows are put, one pixel per cell, in a buffer; the
       heatmap shows them one row a frame while each row gets MIN_ROW CSS pixels, else merged into bands of
       consecutive frames (a cell shows any change within its band, else the band's last state), so every row stays
       readable. The bands go on an offscreen canvas; the visible canvas gets that image scaled once to its own
       device pixels, and only when rows arrive or its size changes. */
    var rows = side.rows, n = rows.length, lay = aligned(side), w = Math.max(1, lay ? lay.width : side.maxLen);
    var canvas = v.heat;
    if (!n) { clearHeat(v, side); return; }
    growHeat(side, w, n);
    fillHeat(side, lay, w, n);
    if (side.heatRows !== n) side.heatGen = (side.heatGen || 0) + 1;
    side.heatRows = n;
    var cssH = v.heatSize[1];
    var per = Math.max(1, Math.ceil(n / Math.max(1, Math.floor(cssH / MIN_ROW)))); /* whole frames a row */
    var bands = Math.ceil(n / per);
    drawBands(v, side, w, n, per, bands);
    setAttr(canvas, "data-rows", String(n));
    setAttr(canvas, "data-bands", String(bands));
    setAttr(canvas, "data-cols", String(w));
    scaleHeat(v, w, bands);
    heatAxes(v, side, w, per);
    heatMarker(v, side, idx, per, bands);
  }

  /* a side with no rows yet: a blank heatmap, no marker, no axis labels */
  function clearHeat(v, side) {
    var canvas = v.heat;
    if (canvas.width !== 1 || canvas.height !== 1) { canvas.width = 1; canvas.height = 1; }
    canvas.getContext("2d").clearRect(0, 0, 1, 1);
    setAttr(canvas, "data-rows", "0");
    setAttr(canvas, "data-bands", "0");
    v.marker.hidden = true;
    v.heatOut = "";
    side.heatDrawn = 0;
    setText(v.yTop, ""); setText(v.yBottom, ""); setText(v.xLast, ""); setText(v.yName, "");
  }

  /* the side's buffer of cells, one 32-bit pixel each, made room for n rows of w (doubling, as rows stream in) */
  function growHeat(side, w, n) {
    if (side.heat && side.heatW === w && side.heat.length >= w * n) return;
    var capacity = Math.max(n, side.heat && side.heatW === w ? (side.heat.length / w) * 2 : 64);
    var buf = new Uint32Array(w * capacity);
    if (side.heat && side.heatW === w) buf.set(side.heat.subarray(0, w * side.heatRows));
    else side.heatRows = 0;
    side.heat = buf;
    side.heatW = w;
  }

  /* the rows not yet in the buffer, from side.heatRows to n */
  function fillHeat(side, lay, w, n) {
    var rows = side.rows;
    var buf32 = side.heat, pinned = side.pinned;
    for (var r = side.heatRows; r < n; r++) {
      var row = rows[r], base = r * w, cols = lay && lay.cols[r], st = row && row.st;
      if (cols) buf32.fill(HEAT32.empty, base, base + w);
      for (var c = 0; c < (cols ? cols.length : w); c++) {
        if (!row || c >= row.tok.length) { buf32[base + c] = HEAT32.empty; continue; }
        buf32[base + (cols ? cols[c] : c)] = cellColour(row.ch ? row.ch[c] : 0, !!(row.m && row.m[c]),
                                                        !!(pinned && pinned[c]), st ? st[c] : "",
                                                        row.rv ? row.rv[c] : "");
      }
      if (lay && lay.gone[r]) lay.gone[r].forEach(function (col) { buf32[base + col] = HEAT32.deleted; });
      else if (row && row.dl && !st) {  /* a text state that shrank: as many deleted cells past its end */
        for (var d = row.tok.length; d < Math.min(w, row.tok.length + row.dl.length); d++) buf32[base + d] = HEAT32.deleted;
      }
    }
  }

  /* the bands (a frame each, or consecutive frames merged) on the offscreen canvas v.heatSrc */
  function drawBands(v, side, w, n, per, bands) {
    var buf32 = side.heat;
    var cells = v.heatSrc;
    var drawn = side.heatGen + ":" + bands;
    if (cells.width !== w || cells.height !== bands) {
      cells.width = w;
      cells.height = bands;
      side.heatDrawn = 0;
      v.heatDrawnKey = "";
    }
    if (bands === n && side.heatDrawn < n && v.heatDrawnKey !== drawn) {
      var from = side.heatDrawn;
      var image = new ImageData(new Uint8ClampedArray(buf32.buffer, from * w * 4, w * (n - from) * 4), w, n - from);
      cells.getContext("2d").putImageData(image, 0, from);
      side.heatDrawn = n;
      v.heatGen++;
      v.heatDrawnKey = drawn;
    } else if (bands < n && v.heatDrawnKey !== drawn) {
      var merged = new Uint32Array(w * bands);
      for (var g = 0; g < bands; g++) {
        var a = g * per, b = Math.min(n, a + per);
        for (var col = 0; col < w; col++) {
          var best = buf32[(b - 1) * w + col], rank = 0;
          for (var f = a; f < b; f++) {
            var k = HEAT_RANK[buf32[f * w + col]] || 0;
            if (k > rank) { rank = k; best = buf32[f * w + col]; }
          }
          merged[g * w + col] = best;
        }
      }
      cells.getContext("2d").putImageData(new ImageData(new Uint8ClampedArray(merged.buffer), w, bands), 0, 0);
      side.heatDrawn = 0;
      v.heatGen++;
      v.heatDrawnKey = drawn;
    }
  }

  /* the offscreen bands scaled once onto the visible canvas, at its device pixels */
  function scaleHeat(v, w, bands) {
    var canvas = v.heat, cells = v.heatSrc, cssH = v.heatSize[1];
    var dpr = global.devicePixelRatio || 1;
    var W = Math.round(v.heatSize[0] * dpr), H = Math.round(cssH * dpr);
    var out = W + "x" + H + ":" + v.heatGen;
    if (W > 0 && H > 0 && v.heatOut !== out) {
      if (canvas.width !== W) canvas.width = W;
      if (canvas.height !== H) canvas.height = H;
      var ctx = canvas.getContext("2d");
      /* crisp cells while each gets at least a pixel; averaged when squeezed */
      ctx.imageSmoothingEnabled = w > W;
      ctx.imageSmoothingQuality = "medium"; /* mipmapped averaging, at half the cost of "high" */
      ctx.clearRect(0, 0, W, H);
      ctx.drawImage(cells, 0, 0, w, bands, 0, 0, W, H);
      v.heatOut = out;
    }
  }

  /* the axes: frames down by time or passes (the first and last frame's), positions across */
  function heatAxes(v, side, w, per) {
    var rows = side.rows, canvas = v.heat;
    var passes = onPasses(side), first = rows[0], lastR = rows[lastRow(side)];
    setText(v.yName, (passes ? "passes" : "time") + " \u2193");
    setText(v.xName, "position in the answer \u2192" + (per > 1 ? " \u00B7 " + per + " frames a row" : ""));
    setText(v.yTop, first ? whenText(first, passes) : "");
    setText(v.yBottom, lastR ? whenText(lastR, passes) : "");
    setText(v.xLast, String(w - 1));
    setAttr(canvas, "aria-label", v.heatLabel + (per > 1 ? "; each row merges " + per +
      " frames and shows any change in them" : "; one row a frame"));
  }

  /* the frame marker at frame idx (hidden at -1): it spans the heatmap's height and is moved by a transform, so
     scrubbing repaints no heatmap */
  function heatMarker(v, side, idx, per, bands) {
    if (v.marker.hidden !== idx < 0) v.marker.hidden = idx < 0;
    if (idx < 0) return;
    var band = Math.floor(idx / per);
    var move = "translateY(" + ((band + 0.5) / bands * 100).toFixed(3) + "%)";
    if (v.marker.style.transform !== move) v.marker.style.transform = move;
    var shown = side.rows[idx];
    setText(v.markerLabel, "frame " + (idx + 1) + (shown ? " \u00B7 " + whenText(shown, onPasses(side)) : ""));
    setAttr(v.marker, "data-label-below", band < bands / 2 ? "true" : "false");
  }

  function aligned(side) {
    /* a side whose frames insert or delete positions: its heatmap columns follow each position (lineColumns),
       worked out again only when rows arrive */
    if (!side.seen.aligned) return null;
    if (!side.lay || side.layRows !== side.rows.length) {
      side.lay = lineColumns(side.rows);
      side.layRows = side.rows.length;
    }
    return side.lay;
  }

  function whenText(row, passes) {
    return passes && row.nfe != null ? "pass " + row.nfe : row.t.toFixed(2) + " s";
  }

  function paintMetrics() {
    /* time per token is shown beside time to final when the answers' lengths differ; each length names its unit */
    var ml = state.sides.left.metrics, mr = state.sides.right.metrics;
    var differ = !!(ml && mr && ml.answer_tokens !== mr.answer_tokens);
    var perToken = cells.time_per_token.left.parentNode;
    if (perToken.hidden === differ) perToken.hidden = !differ;
    var drafted = SIDES.some(function (s) { var m = state.sides[s].metrics; return !!(m && m.draft_kept != null); });
    for (var key in DRAFT_METRICS) if (cells[key].left.parentNode.hidden === drafted) cells[key].left.parentNode.hidden = !drafted;
    SIDES.forEach(function (s) {
      var side = state.sides[s], m = side.metrics;
      METRICS.forEach(function (def) {
        var cell = cells[def[0]][s];
        var text;
        if (m && def[0] === "answer_tokens") text = m.answer_tokens == null ? "\u2014" : unitCount(m.answer_tokens, m.token_unit);
        else if (m && def[0] === "draft_kept" && m.draft_kept != null) text = m.draft_kept + " of " + m.draft_positions;
        else if (m) text = def[2](m[def[0]]);
        else if (def[0] === "frames") text = side.rows.length ? String(side.rows.length) : "\u2014";
        else text = side.status === "running" ? "\u2026" : "\u2014";
        setText(cell, text);
      });
    });
  }

  return { paintSide: paintSide, paintMetrics: paintMetrics, follow: follow };
}
