/* The static site's page: a prompt, Run, and the page's player (app/view/player/, the same as the HTML export's)
 * drawing both sides as their frames come, from rows app/site/rows.js builds in the browser (text only, never HTML). */
(function () {
  "use strict";
  var form = document.getElementById("cv-form"), prompt = document.getElementById("cv-prompt");
  var run = document.getElementById("cv-run"), status = document.getElementById("cv-status");
  var query = new URLSearchParams(location.search);
  var onPresenter = function (on) { document.documentElement.classList.toggle("cv-presenting", on); };
  var player = window.ConvergePlayer.create(document.getElementById("converge"), {
    presenter: query.get("presenter") === "1", onPresenter: onPresenter, clock: query.get("clock") || "time"});
  var SPECS = {left: "local-diffusion", right: "local-ar"}, races = 0;

  var OFFERED = ["threshold", "filter", "min_length"];  // the settings race.js honours beyond the length

  function chosen() {
    var out = {length: Number(document.getElementById("cv-length").value)};
    OFFERED.forEach(function (k) { out[k] = Number(document.getElementById("cv-" + k).value); });
    return out;
  }

  function side(key, status, start, rows, extra) {
    var out = {spec: SPECS[key], status: status, message: null, start: start, rows: rows};
    return Object.assign(out, extra || {});
  }

  function race(text, analysis) {
    var id = "site-" + (++races), seq = 0, made = {left: [], right: []};
    var rows = {left: window.ConvergeRows.analyzer(), right: window.ConvergeRows.analyzer()};
    player.update({run: id, seq: seq, mode: "live", prompt: text, recording: "", done: false, message: null,
                   caption: "", warnings: [], sides: {left: side("left", "running", 0, []),
                                                      right: side("right", "running", 0, [])}});
    var onFrame = function (key, frame) {
      var row = rows[key].add(frame), sides = {};
      made[key].push(frame);
      sides[key] = side(key, "running", row.i, window.ConvergeRows.wire([row]));
      player.update({run: id, seq: ++seq, sides: sides});
    };
    return window.converge.race(text, Object.assign(chosen(), {onFrame: onFrame})).then(function (r) {
      var sides = {};
      ["left", "right"].forEach(function (key) {
        sides[key] = side(key, "done", made[key].length, [], window.ConvergeRows.summary(made[key], analysis));
      });
      player.update({run: id, seq: ++seq, done: true, sides: sides});
      return r;
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    run.disabled = true;
    status.textContent = "Racing\u2026";
    window.converge.analysis.then(function (analysis) { return race(prompt.value, analysis); }).then(function (r) {
      status.textContent = "Done: diffusion " + r.left.nfe + " passes, AR " + r.right.nfe + " passes.";
    }, function (e) { status.textContent = String(e && e.message || e); })
      .then(function () { run.disabled = false; });
  });
  window.converge.settings.then(function (s) {
    document.getElementById("cv-length").value = String(s.gen_length);
    OFFERED.forEach(function (k) { document.getElementById("cv-" + k).value = String(s[k] === null ? 0 : s[k]); });
  }, function () { /* the status line says why loading failed */ });
  window.converge.ready.then(function () { run.disabled = false; status.textContent = "Ready."; },
                             function (e) { status.textContent = String(e && e.message || e); });
})();
