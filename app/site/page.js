/* The static site's page: a prompt, Run, a draft to start from, each twin's settings, the page's player
 * (app/view/player/, the same as the HTML export's) drawing both sides as their frames come (window.ConvergeRows.race:
 * rows built in the browser, text only, never HTML), and the twins' board (window.ConvergeRows.showBoard). The
 * settings' controls are built from the declarations race.js reads (twins.json, written from the Python ones for
 * app/sources/local.py BROWSER_SETTINGS), so the page offers exactly what the browser's samplers honour. */
(function () {
  "use strict";
  var form = document.getElementById("cv-form"), prompt = document.getElementById("cv-prompt");
  var run = document.getElementById("cv-run"), status = document.getElementById("cv-status");
  var stop = document.getElementById("cv-stop"), stopper = null;  // Stop: both sides end before their next pass
  var query = new URLSearchParams(location.search);
  var onPresenter = function (on) { document.documentElement.classList.toggle("cv-presenting", on); };
  var player = window.ConvergePlayer.create(document.getElementById("converge"), {
    presenter: query.get("presenter") === "1", onPresenter: onPresenter, clock: query.get("clock") || "time",
    idle: "Type a prompt and press Run: the twins race in this browser."});
  var PREFIX = {diffusion: "cv-", ar: "cv-ar-"}, LEGEND = {diffusion: "Diffusion twin's settings",
                                                           ar: "AR twin's settings"};
  var shown = null;  // {kind: {name: its declaration}} once built

  /* one control from a setting's page entry (app/engine/options.py `settings_spec`): a checkbox, a list or a number */
  function control(id, c) {
    var input;
    if (c.choices && !(c.choices.length === 2 && typeof c.choices[0] === "boolean")) {
      input = document.createElement("select");
      c.choices.forEach(function (v) {
        var o = document.createElement("option");
        o.textContent = String(v); o.value = String(v);
        input.appendChild(o);
      });
      input.value = String(c.default);
    } else if (typeof c.default === "boolean") {
      input = document.createElement("input");
      input.type = "checkbox"; input.checked = c.default;
    } else {
      input = document.createElement("input");
      input.type = "number"; input.value = String(c.default);
      ["min", "max", "step"].forEach(function (k) { if (c[k] != null) input[k] = String(c[k]); });
    }
    input.id = id;
    var label = document.createElement("label");
    label.textContent = c.label + " ";
    if (c.info) label.title = c.info;
    label.appendChild(input);
    return label;
  }

  function build(controls) {
    var box = document.getElementById("cv-settings");
    shown = {};
    Object.keys(PREFIX).forEach(function (kind) {
      var set = document.createElement("fieldset"), legend = document.createElement("legend");
      var declared = controls[kind].declared;
      set.id = PREFIX[kind] + "settings";
      legend.textContent = LEGEND[kind];
      set.appendChild(legend);
      shown[kind] = declared;
      Object.keys(declared).forEach(function (name) {
        if (name === "gen_length") {  // one length for both twins: the diffusion twin's list, as `length`
          if (kind === "diffusion") set.appendChild(control("cv-length", declared[name].control));
          return;
        }
        set.appendChild(control(PREFIX[kind] + name, declared[name].control));
      });
      box.appendChild(set);
    });
  }

  function value(d, input) {
    if (input.type === "checkbox") return input.checked;
    return d.type === "str" ? input.value : Number(input.value);
  }

  /* the "Start from a draft" box (app/ui/draft_ui.py's words): the race's `draft` option, none with an empty draft */
  function drafted() {
    var text = document.getElementById("cv-draft").value, where = document.getElementById("cv-renoise-where").value;
    if (!text.trim()) return null;
    var seed = document.getElementById("cv-renoise-seed").value;
    return {text: text, share: Number(document.getElementById("cv-renoise").value) / 100,
            seed: seed.trim() === "" ? NaN : Number(seed),
            where: where === "span" ? document.getElementById("cv-renoise-span").value.trim() : where};
  }

  function chosen() {
    var out = {length: Number(document.getElementById("cv-length").value), ar: {}, draft: drafted()};
    Object.keys(shown).forEach(function (kind) {
      Object.keys(shown[kind]).forEach(function (name) {
        if (name === "gen_length") return;
        var v = value(shown[kind][name], document.getElementById(PREFIX[kind] + name));
        if (kind === "ar") out.ar[name] = v; else out[name] = v;
      });
    });
    return out;
  }

  var boardRun = document.getElementById("cv-board-run");  // absent from the single file, whose page says why
  var boardStop = document.getElementById("cv-board-stop"), boardStopper = null;

  function busy(on) {  // one race or board at a time: Run and the board's button wait for the other
    run.disabled = on;
    if (boardRun) boardRun.disabled = on;
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    busy(true);
    stop.disabled = false;
    status.textContent = "Racing\u2026";
    stopper = new AbortController();
    window.ConvergeRows.race(player, prompt.value, Object.assign(chosen(), {signal: stopper.signal})).then(function (r) {
      status.textContent = (r.left.stopped || r.right.stopped ? "Stopped" : "Done") + ": diffusion " + r.left.nfe +
                           " passes, AR " + r.right.nfe + " passes.";
    }, function (e) { status.textContent = String(e && e.message || e); })
      .then(function () { busy(false); stop.disabled = true; stopper = null; });
  });
  stop.addEventListener("click", function () { if (stopper) stopper.abort(); });

  /* The board (window.ConvergeRows.showBoard, app/site/js/race.js, as the served page's browser board draws it): the
     openings raced one after another in the player, the table's rows (text only) filled as each race ends, and the
     line under it from those rows. ?openings=N races the first N only. */
  var boardData = null;
  function boardStart() {
    var parts = {table: document.getElementById("cv-board-table"), status: document.getElementById("cv-board-status"),
                 note: document.getElementById("cv-board-note")};
    busy(true);
    boardStop.disabled = false;
    boardStopper = new AbortController();
    window.ConvergeRows.showBoard(player, parts, boardData, query.get("openings"), boardStopper.signal)
      .then(function () { busy(false); boardStop.disabled = true; boardStopper = null; });
  }

  if (boardRun) {
    window.converge.board.then(function (data) {
      boardData = data;
      window.ConvergeRows.boardHeads(document.getElementById("cv-board-table"), data);
      boardRun.addEventListener("click", boardStart);
      boardStop.addEventListener("click", function () { if (boardStopper) boardStopper.abort(); });
    }, function () { /* the status line says why loading failed */ });
  }
  window.converge.controls.then(build, function () { /* the status line says why loading failed */ });
  window.converge.ready.then(function () { busy(false); status.textContent = "Ready."; }, function (e) {
    /* why the twins cannot race here (opened from disk: how to open it), in the page's status and the player's */
    var why = String(e && e.message || e);
    status.textContent = why;
    player.update({run: "unavailable", mode: "message", message: why});
  });
})();
