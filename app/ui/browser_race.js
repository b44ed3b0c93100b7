/* The page's browser race (app/ui/browser_race.py): the built-in twins race on the visitor's device; the run is sent
 * once it ends, or once Stop ends it (with every frame made so far), to be saved.
 *
 * Run (on "your browser") calls window.ConvergeBrowserRace.run(spec, values) with no handler on the server: it loads
 * the static site's runtime and race.js (onnxruntime-web; the samplers and rows, app/site/js/ bundled) from this page's
 * own origin under spec.base, once, then hands the race to window.ConvergeRows.race, which draws it in the page's
 * player as the static site's page does. The settings the browser's samplers honour (each input's `offered`, from
 * app/sources/local.py `BROWSER_SETTINGS`, race.js's own list) race as set, both twins'; any other set away from its
 * default is named in the player's notice, never raced differently (and the server is not told: a race it runs goes
 * on). Once the settings are taken, the hidden #browser-began is clicked, so the session's race on the server stops.
 * A draft typed in the "Start from a draft" box races from it in the browser, as the static site's page does; a draft
 * the server reads (the last race's side, a recording) is named in the player's notice, with the choice that races it
 * (Run on: this server).
 * Every string reaches the page as text (the player's textContent).
 * The page's Stop calls stop(): both sides end before their next pass and keep their frames. However it ends, the race
 * (prompt, each side's settings, frames and end) goes to the server, gzip-compressed, through the hidden #browser-kept
 * box, whose handler saves it in the visitor's library (app/ui/browser_race.py `keep`).
 * The Board area's board in the browser (`board`) races the same way, in the same player, one race or board at a time.
 */
(function () {
  "use strict";
  var loading = null, busy = false, stopper = null;

  function script(src) {
    return new Promise(function (ok, fail) {
      var s = document.createElement("script");
      s.src = src;
      s.onload = ok;
      s.onerror = function () { fail(new Error("This server did not send the browser race's files.")); };
      document.head.appendChild(s);
    });
  }

  function load(base) {  // once per page: the runtime, then the samplers and rows (which start loading the graphs)
    if (!loading) {
      window.CONVERGE_BASE = base;
      loading = script(base + "ort/ort.wasm.min.js").then(function () { return script(base + "race.js"); })
        .then(function () { return window.converge.ready; });
    }
    return loading;
  }

  function given(value, spec) {  // a setting the browser honours, as its box gives it (an empty box: the default)
    if (value === null || value === undefined || value === "") return spec.default;
    if (typeof spec.default === "number") return Number(value);
    return typeof spec.default === "boolean" ? value === true || value === "true" : String(value);
  }

  function same(value, spec) {  // a setting at its default (an empty own-value box is the default)
    if (value === null || value === undefined || value === "") return spec.own;
    return typeof spec.default === "number" ? Number(value) === spec.default : value === spec.default;
  }

  /* the race's `draft` option from the "Start from a draft" box's values (app/ui/draft_ui.py, in its order: start,
     text, side, recording, share, where, span, seed): null from nothing, a sentence where the draft is the server's
     to read (the last race's side, a recording) */
  function drafted(words, box) {
    var start = box[0], where = words.where[box[5]];
    if (start == null || start === words.nothing) return null;
    if (start !== words.typed) return words.refused;
    if (where === undefined) return "Pick which tokens to re-noise: random, least sure or a span.";
    return {text: String(box[1] || ""), share: Number(box[4]) / 100, seed: box[7] == null ? NaN : Number(box[7]),
            where: where === "span" ? String(box[6] || "").trim() : where};
  }

  /* the options for window.converge.race from the sides' settings, or a sentence saying why they cannot race here */
  function options(spec, values) {
    var pins = values[1], kinds = [values[2], values[3]], out = {ar: {}}, differ = [], lengths = {};
    if (kinds[0] !== "local-diffusion" || kinds[1] !== "local-ar") {
      return "The browser race runs the built-in twins only (local-diffusion against local-ar); pick Run on: " +
             "this server for these sources.";
    }
    if (String(pins || "").trim()) return "Pinned text runs on the server: pick Run on: this server.";
    spec.inputs.forEach(function (s, i) {
      var v = values[4 + i];
      if (s.name === "gen_length") { lengths[s.side] = Number(v); return; }
      if (s.offered) { (s.side === "left" ? out : out.ar)[s.name] = given(v, s); return; }  // spec_of: race.js's list
      if (!same(v, s)) differ.push(s.label);
    });
    if (lengths.left !== lengths.right) differ.push("the two sides' answer lengths (the browser races one length)");
    if (differ.length) {
      return "The browser race runs these settings at the twins' defaults only, and these differ: " +
             differ.join(", ") + ". Pick Run on: this server to race them.";
    }
    out.length = lengths.left;
    var draft = spec.draft ? drafted(spec.draft, values.slice(4 + spec.inputs.length)) : null;
    if (typeof draft === "string") return draft;
    if (draft) out.draft = draft;
    return out;
  }

  function base64(bytes) {
    var out = "";
    for (var i = 0; i < bytes.length; i += 0x8000) out += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
    return btoa(out);
  }

  /* the race as `keep` reads it, gzip-compressed (CompressionStream) and base64, written into the hidden box `kept`
     (#browser-kept) as typing would (the native setter, then the input event Gradio listens to) */
  function hand(kept, prompt, r) {
    var sides = {};
    ["left", "right"].forEach(function (key) {
      sides[key] = {settings: r[key].settings, frames: r[key].frames, status: r[key].stopped ? "stopped" : "done"};
      if (r[key].draft) sides[key].draft = r[key].draft;  // its plan, as the header keeps a side's
    });
    var race = {prompt: prompt, sides: sides};
    if (r.draft) race.draft = r.draft;  // the draft it started from, as the header keeps it
    var json = new Blob([JSON.stringify(race)]);
    return new Response(json.stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer().then(function (buf) {
      var box = document.querySelector("#" + kept + " textarea, #" + kept + " input");
      if (!box) return;
      var proto = box.tagName === "TEXTAREA" ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
      Object.getOwnPropertyDescriptor(proto, "value").set.call(box, base64(new Uint8Array(buf)));
      box.dispatchEvent(new Event("input", {bubbles: true}));
    });
  }

  function run(spec, values) {
    var root = document.querySelector("#player .cv-player"), player = root && root.convergePlayer;
    if (!player || busy) return;
    var chosen = options(spec, values), prompt = String(values[0] || "");
    if (typeof chosen === "string") { player.update({notice: chosen}); return; }
    var began = document.getElementById(spec.began);  // the server's race, if any, stops (browser_race.py `began`)
    if (began) began.click();
    busy = true;
    stopper = new AbortController();
    chosen.signal = stopper.signal;
    player.update({notice: "Loading the twins into your browser\u2026"});
    load(spec.base).then(function () {
      return window.ConvergeRows.race(player, prompt, chosen, {start: {caption: spec.racing}, end: {caption: spec.ran}});
    }).then(function (r) { return hand(spec.kept, prompt, r); })
      .catch(function (e) { player.update({notice: String(e && e.message || e)}); })
      .then(function () { busy = false; stopper = null; });
  }

  function stop() { if (stopper) stopper.abort(); }

  /* The Board area's twins' board in the browser (app/ui/board_tab.py `browser_board`; its gr.HTML's js_on_load
     calls this with its element): its button loads the site's files as a race does, clicks the hidden button that
     stops the session's race on the server, and hands the board to window.ConvergeRows.showBoard, the static site's
     one drawing of it, in the page's player (?openings=N races the first N). Its Stop, and the page's, stop it
     keeping the races that finished. One race or board at a time; nothing is sent to the server to be saved. */
  function board(element) {
    var box = element.querySelector("[data-base]"), query = new URLSearchParams(location.search);
    if (!box || box.getAttribute("data-wired")) return;
    box.setAttribute("data-wired", "1");
    var id = box.id.replace(/-box$/, ""), part = function (name) { return document.getElementById(id + "-" + name); };
    var go = part("run"), end = part("stop");
    var parts = {table: part("table"), status: part("status"), note: part("note")};
    go.addEventListener("click", function () {
      var root = document.querySelector("#player .cv-player"), player = root && root.convergePlayer;
      if (!player || busy) return;
      var began = document.getElementById(box.getAttribute("data-began"));
      if (began) began.click();
      busy = true; go.disabled = true; end.disabled = false;
      stopper = new AbortController();
      var signal = stopper.signal;
      parts.status.textContent = "Loading the twins into your browser\u2026";
      load(box.getAttribute("data-base")).then(function () { return window.converge.board; }).then(function (data) {
        return window.ConvergeRows.showBoard(player, parts, data, query.get("openings"), signal);
      }).catch(function (e) { parts.status.textContent = String(e && e.message || e); })
        .then(function () { busy = false; go.disabled = false; end.disabled = true; stopper = null; });
    });
    end.addEventListener("click", stop);
  }

  window.ConvergeBrowserRace = {run: run, options: options, stop: stop, board: board};
})();
