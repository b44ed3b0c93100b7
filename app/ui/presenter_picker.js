/* Converge page: the presenter's compact picker (the player's "Race / recording..." button or key O). Runs a race
   with the page's sources, or loads a recording from the library, without leaving presenter mode: it drives the
   page's own (hidden) prompt box and Run button, and the hidden #presenter-load box whose input loads a recording.
   The library's ids come from the hidden #presenter-list box. Every string is written with textContent. */
(function (global) {
  "use strict";

  var el = global.ConvergePlayer.el;  /* the player's own element maker (app/view/player/common.js), loaded first */

  function field(sel) { return document.querySelector(sel); }

  function setValue(box, value) {
    /* as typing would: the native setter, then the input event the page listens to */
    var proto = box.tagName === "TEXTAREA" ? HTMLTextAreaElement.prototype : HTMLInputElement.prototype;
    Object.getOwnPropertyDescriptor(proto, "value").set.call(box, value);
    box.dispatchEvent(new Event("input", { bubbles: true }));
  }

  function ids() {
    var box = field("#presenter-list textarea, #presenter-list input");
    try { var list = JSON.parse(box && box.value || "[]"); return Array.isArray(list) ? list : []; }
    catch (e) { return []; }
  }

  function picker(root) {
    var dialog = el("div", "cv-picker", null, { role: "dialog", "aria-modal": "true", "aria-label": "Run a race or load a recording",
                                                "data-own-keys": "true" });
    dialog.hidden = true;
    var card = dialog.appendChild(el("div", "cv-picker-card"));
    card.appendChild(el("p", "cv-picker-title", "Run a race or load a recording"));
    var race = card.appendChild(el("div", "cv-picker-race"));
    var promptId = "cv-picker-prompt-" + Math.random().toString(36).slice(2, 9);
    race.appendChild(el("label", "cv-label", "Prompt", { for: promptId }));
    var prompt = race.appendChild(el("textarea", "cv-picker-prompt", null, { id: promptId, rows: "2" }));
    var sources = race.appendChild(el("p", "cv-picker-sources"));
    var run = race.appendChild(el("button", "cv-btn cv-play cv-picker-run", "Run", { type: "button" }));
    card.appendChild(el("p", "cv-label", "Recordings"));
    var list = card.appendChild(el("div", "cv-picker-list", null, { role: "list" }));
    var close = card.appendChild(el("button", "cv-btn cv-picker-close", "Close", { type: "button" }));
    root.appendChild(dialog);

    function open() {
      var page = field("#prompt textarea");
      prompt.value = page ? page.value : "";
      var left = field("#left-source input"), right = field("#right-source input");
      sources.textContent = "Sources as set on the page: " + (left ? left.value : "?") + " against " +
        (right ? right.value : "?") + ".";
      list.textContent = "";
      ids().forEach(function (id) {
        var name = String(id), kind = name.indexOf("example/") === 0 ? "example" : "yours";
        var item = list.appendChild(el("button", "cv-btn cv-picker-item", null,
                                       { type: "button", role: "listitem", "data-id": name }));
        item.appendChild(el("span", "cv-picker-name", name.slice(name.indexOf("/") + 1)));
        item.appendChild(el("span", "cv-picker-kind", kind));
        item.addEventListener("click", function () {
          var box = field("#presenter-load textarea, #presenter-load input");
          if (box) { setValue(box, ""); setTimeout(function () { setValue(box, name); }, 0); } /* a change each pick */
          hide();
        });
      });
      if (!list.firstChild) list.appendChild(el("p", "cv-label", "No recordings yet."));
      dialog.hidden = false;
      root.setAttribute("data-picker", "open");
      prompt.focus();
    }

    function hide() {
      dialog.hidden = true;
      root.setAttribute("data-picker", "closed");
      if (document.activeElement && dialog.contains(document.activeElement)) document.activeElement.blur();
    }

    run.addEventListener("click", function () {
      var page = field("#prompt textarea"), button = field("#run");
      if (page) setValue(page, prompt.value);
      hide();
      if (button) setTimeout(function () { button.click(); }, 0); /* after the page has taken the prompt */
    });
    close.addEventListener("click", hide);
    dialog.addEventListener("keydown", function (e) {
      if (e.key === "Escape") { hide(); e.preventDefault(); }
      e.stopPropagation(); /* typing here is not a shortcut of the player */
    });
    root.setAttribute("data-picker", "closed");
    return { open: open, close: hide, toggle: function () { if (dialog.hidden) open(); else hide(); } };
  }

  global.ConvergePicker = picker;
})(typeof window !== "undefined" ? window : this);
