/* The twins' stutter guard (app/engine/stutter.py `no_repeat`, `no_repeat_left`): a guarded token never written beside
 * itself, and what the guards read of a run (which positions are written, the block's positions).
 */

/* ---- the stutter guard (app/engine/stutter.py) ---- */

export function guarded(token, eos, repeatable) { return token !== eos && !repeatable[token]; }

export function noRepeat(z, run, lo, twin) {
  for (var r = 0; r < z.length; r++) {
    [lo + r - 1, lo + r + 1].forEach(function (nb) {
      if (nb >= run.L || (nb >= 0 && run.masked[nb])) return;
      var token = run.x[run.P + nb];
      if (guarded(token, twin.eos, twin.repeatable)) z[r][token] = -Infinity;
    });
  }
}

/* the guard left to right (the AR twin, stutter.py `no_repeat_left`): never the token just written, `left` (the
   prompt's last before the first; undefined: nothing written) */
export function noRepeatLeft(z, left, twin) {
  if (left !== undefined && guarded(left, twin.eos, twin.repeatable)) z[left] = -Infinity;
}

export function writtenOf(run) {
  var w = [];
  for (var i = 0; i < run.x.length; i++) w.push(i < run.P || !run.masked[i - run.P]);
  return w;
}

/* the block's positions in the whole sequence, as the guard reads them */
export function blockPositions(run, lo) {
  var out = [];
  for (var r = 0; r < run.s.block_length; r++) out.push(run.P + lo + r);
  return out;
}

export function apart(pick, chosen, eos, repeatable) {
  return pick.filter(function (r) {
    return !(pick.indexOf(r - 1) >= 0 && chosen[r] === chosen[r - 1] && guarded(chosen[r], eos, repeatable));
  });
}

