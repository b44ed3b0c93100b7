/* The static site's page: a prompt, Run, and the page's player (app/view/player/, the same as the HTML export's)
 * drawing both sides as their frames come (app/site/rows.js `race`: rows built in the browser, text only, never HTML). */
(function () {
  "use strict";
  var form = document.getElementById("cv-form"), prompt = document.getElementById("cv-prompt");
  var run = document.getElementById("cv-run"), status = document.getElementById("cv-status");
  var query = new URLSearchParams(location.search);
  var onPresenter = function (on) { document.documentElement.classList.toggle("cv-presenting", on); };
  var player = window.ConvergePlayer.create(document.getElementById("converge"), {
    presenter: query.get("presenter") === "1", onPresenter: onPresenter, clock: query.get("clock") || "time"});
  var OFFERED = ["threshold", "filter", "min_length"];  // the settings race.js honours beyond the length

  function chosen() {
    var out = {length: Number(document.getElementById("cv-length").value)};
    OFFERED.forEach(function (k) { out[k] = Number(document.getElementById("cv-" + k).value); });
    return out;
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    run.disabled = true;
    status.textContent = "Racing\u2026";
    window.ConvergeRows.race(player, prompt.value, chosen()).then(function (r) {
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
