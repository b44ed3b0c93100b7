/* The static site's page: a prompt, Run, and each side's tokens drawn as they come (text only, never HTML). */
(function () {
  "use strict";
  var form = document.getElementById("cv-form"), prompt = document.getElementById("cv-prompt");
  var run = document.getElementById("cv-run"), status = document.getElementById("cv-status");
  var panels = {left: document.getElementById("cv-left"), right: document.getElementById("cv-right")};
  var facts = {left: document.getElementById("cv-left-facts"), right: document.getElementById("cv-right-facts")};
  var MASK = "\u2591";

  function draw(side, frame) {
    var box = panels[side], frag = document.createDocumentFragment();
    frame.tokens.forEach(function (text, i) {
      var span = document.createElement("span");
      var hidden = frame.masked && frame.masked[i];
      span.className = hidden ? "cv-tok cv-masked" : "cv-tok";
      span.textContent = hidden ? MASK : text;
      frag.appendChild(span);
    });
    box.replaceChildren(frag);
    facts[side].textContent = frame.nfe + " passes, " + frame.t.toFixed(2) + " s" + (frame.final ? ", done" : "");
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    run.disabled = true;
    status.textContent = "Racing\u2026";
    window.converge.race(prompt.value, {onFrame: draw}).then(function (r) {
      status.textContent = "Done: diffusion " + r.left.nfe + " passes, AR " + r.right.nfe + " passes.";
    }, function (e) { status.textContent = String(e && e.message || e); })
      .then(function () { run.disabled = false; });
  });
  window.converge.ready.then(function () { run.disabled = false; status.textContent = "Ready."; },
                             function (e) { status.textContent = String(e && e.message || e); });
})();
