/* The guard against repeated runs of n tokens every twin runs alike (app/engine/repeats.py `NoRepeatNGram`): `ban`
 * as ngramBan, `fresh` as ngramFresh.
 */

/* ---- the guard against repeated runs every twin runs alike (app/engine/repeats.py `NoRepeatNGram`) ---- */

function runKey(tokens, start, n, skip) {
  var k = [];
  for (var i = start; i < start + n; i++) if (i !== skip) k.push(tokens[i]);
  return k.join(",");
}

function completeRuns(tokens, written, n, eos) {
  var done = [];
  for (var i = 0; i + n <= tokens.length; i++) {
    var ok = true;
    for (var k = i; k < i + n && ok; k++) ok = written[k] && tokens[k] !== eos;
    if (ok) done.push(i);
  }
  return done;
}

/* `ban`: in row r of z, every token that written at positions[r] would complete a run of n tokens already there */
export function ngramBan(z, tokens, written, positions, n, eos) {
  if (n < 2) return;
  var holes = new Map();
  completeRuns(tokens, written, n, eos).forEach(function (i) {
    for (var j = 0; j < n; j++) {
      var key = j + ":" + runKey(tokens, i, n, i + j);
      if (!holes.has(key)) holes.set(key, new Set());
      holes.get(key).add(tokens[i + j]);
    }
  });
  positions.forEach(function (pos, r) {
    var through = [];
    for (var j = 0; j < n; j++) {
      var start = pos - j, ok = start >= 0 && start + n <= tokens.length;
      for (var k = start; k < start + n && ok; k++) ok = k === pos || written[k];
      if (!ok) continue;
      through.push(start);
      (holes.get(j + ":" + runKey(tokens, start, n, pos)) || []).forEach(function (t) { z[r][t] = -Infinity; });
    }
    if (through.length > 1) twoAlike(z[r], tokens, through, pos, n, eos);
  });
}

function twoAlike(zr, tokens, through, pos, n, eos) {
  var seen = new Set();
  through.forEach(function (start) {
    for (var k = start; k < start + n; k++) if (k !== pos) seen.add(tokens[k]);
  });
  seen.forEach(function (token) {
    var runs = new Set(through.map(function (start) {
      var t = []; for (var k = start; k < start + n; k++) t.push(k === pos ? token : tokens[k]); return t.join(",");
    }));
    if (runs.size < through.length && token !== eos) zr[token] = -Infinity;
  });
}

/* `fresh`: of the rows one pass writes together, left to right, those that make no new repeated run */
export function ngramFresh(rows, chosen, tokens, written, positions, n, eos) {
  var sorted = rows.slice().sort(function (a, b) { return a - b; });
  if (n < 2) return sorted;
  tokens = tokens.slice(); written = written.slice();
  var keep = [], repeats = function () {
    var runs = completeRuns(tokens, written, n, eos).map(function (i) { return tokens.slice(i, i + n).join(","); });
    return runs.length - new Set(runs).size;
  };
  var before = repeats();
  sorted.forEach(function (r) {
    var pos = positions[r], old = [tokens[pos], written[pos]];
    tokens[pos] = chosen[r]; written[pos] = true;
    var after = repeats();
    if (keep.length && after > before) { tokens[pos] = old[0]; written[pos] = old[1]; return; }
    keep.push(r); before = after;
  });
  return keep;
}

