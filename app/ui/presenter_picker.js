/* Converge page: the presenter's compact picker (the player's "Race / recording..." button or key O). Runs a race
   with the page's sources, or loads a recording from the library, without leaving presenter mode: it drives the
   page's own (hidden) prompt box and Run button, and the hidden #presenter-load box whose input loads a recording.
   The library's recordings (id, name, prompt or caption, sources, date; newest first) come from the hidden
   #presenter-list box (app/ui/library_ui.py picker_entries); each entry says first what it is: its lesson, or its
   sources and the settings they moved from the defaults. Opening the picker focuses its filter, so what is typed
   filters the list (and never reaches a prompt); Enter loads the first entry shown, the arrow keys move between them.
   Every string is written with textContent. */
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

  function entries() {
    /* [{id, prompt, sources, date}], a bare id read as an entry with only its id */
    var box = field("#presenter-list textarea, #presenter-list input");
    try { var list = JSON.parse(box && box.value || "[]"); }
    catch (e) { return []; }
    return (Array.isArray(list) ? list : []).map(function (e) {
      return e && typeof e === "object" ? e : { id: e };
    });
  }

  function matches(item, words) {
    var text = (item.getAttribute("data-text") || "").toLowerCase();
    return words.every(function (w) { return text.indexOf(w) >= 0; });
  }

  function shownItems(list) {
    return Array.prototype.filter.call(list.querySelectorAll(".cv-picker-item"), function (i) { return !i.hidden; });
  }

  /* one entry's button: what it is (its lesson, or its sources and the settings they moved), then its prompt, then
     its date and whose it is; `pick(id)` loads it */
  function entryItem(e, pick) {
    var name = String(e.id), kind = name.indexOf("example/") === 0 ? "example" : "yours";
    var prompt = String(e.prompt || ""), what = String(e.name || e.sources || name.slice(name.indexOf("/") + 1));
    var about = [e.date, kind].filter(Boolean).map(String).join(" \u00b7 ");
    var item = el("button", "cv-btn cv-picker-item", null, { type: "button", role: "listitem", "data-id": name,
      "data-text": [name, what, prompt, e.sources, about].join(" ") });
    item.appendChild(el("span", "cv-picker-name", what));
    if (prompt) item.appendChild(el("span", "cv-picker-prompt-line", prompt));
    item.appendChild(el("span", "cv-picker-about", about));
    item.addEventListener("click", function () { pick(name); });
    return item;
  }

  /* the filter's and the entries' keys: Enter in the filter loads the first entry shown, the arrows move between
     the filter and the entries shown (an entry's own Enter is its click) */
  function listKeys(filter, list, e) {
    var items = shownItems(list), at = items.indexOf(e.target);
    if (e.target === filter && e.key === "Enter") {
      if (items.length) items[0].click();
      e.preventDefault();
    } else if (e.key === "ArrowDown" && (e.target === filter || at >= 0)) {
      if (items[at + 1]) items[at + 1].focus();
      e.preventDefault();
    } else if (e.key === "ArrowUp" && at >= 0) {
      (at > 0 ? items[at - 1] : filter).focus();
      e.preventDefault();
    }
  }

  // long: the picker's closure: its dialog's nodes and the handlers that share them
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
    var filterId = "cv-picker-filter-" + Math.random().toString(36).slice(2, 9);
    card.appendChild(el("label", "cv-label", "Recordings, newest first: type to filter, Enter loads the first, " +
                        "\u2193 \u2191 choose another", { for: filterId }));
    var filter = card.appendChild(el("input", "cv-picker-filter", null, { id: filterId, type: "search",
                                     placeholder: "lesson, prompt, model, setting or date" }));
    var list = card.appendChild(el("div", "cv-picker-list", null, { role: "list" }));
    var none = card.appendChild(el("p", "cv-label cv-picker-none", "No recording matches."));
    none.hidden = true;
    var close = card.appendChild(el("button", "cv-btn cv-picker-close", "Close", { type: "button" }));
    root.appendChild(dialog);

    function open() {
      var page = field("#prompt textarea");
      prompt.value = page ? page.value : "";
      var left = field("#left-source input"), right = field("#right-source input");
      sources.textContent = "Sources as set on the page: " + (left ? left.value : "?") + " against " +
        (right ? right.value : "?") + ".";
      list.textContent = "";
      filter.value = "";
      entries().forEach(function (e) { list.appendChild(entryItem(e, load)); });
      if (!list.firstChild) list.appendChild(el("p", "cv-label", "No recordings yet."));
      none.hidden = true;
      dialog.hidden = false;
      root.setAttribute("data-picker", "open");
      filter.focus();  /* what is typed next filters the recordings; the prompt is a Tab or a click away */
    }

    function load(id) {
      var box = field("#presenter-load textarea, #presenter-load input");
      if (box) { setValue(box, ""); setTimeout(function () { setValue(box, id); }, 0); } /* a change each pick */
      hide();
    }

    function hide() {
      dialog.hidden = true;
      root.setAttribute("data-picker", "closed");
      if (document.activeElement && dialog.contains(document.activeElement)) document.activeElement.blur();
    }

    run.addEventListener("click", function () {
      /* Gradio renders only the Run shown: the browser's (app/ui/browser_race.py) or the server's */
      var page = field("#prompt textarea"), button = field("#run-browser") || field("#run");
      if (page) setValue(page, prompt.value);
      hide();
      if (button) setTimeout(function () { button.click(); }, 0); /* after the page has taken the prompt */
    });
    close.addEventListener("click", hide);
    filter.addEventListener("input", function () {
      var words = filter.value.toLowerCase().split(/\s+/).filter(Boolean), shown = 0;
      Array.prototype.forEach.call(list.querySelectorAll(".cv-picker-item"), function (item) {
        item.hidden = !matches(item, words);
        if (!item.hidden) shown++;
      });
      none.hidden = shown > 0 || !list.querySelector(".cv-picker-item");
    });
    dialog.addEventListener("keydown", function (e) {
      if (e.key === "Escape") { hide(); e.preventDefault(); }
      else listKeys(filter, list, e);
      e.stopPropagation(); /* typing here is not a shortcut of the player */
    });
    root.setAttribute("data-picker", "closed");
    return { open: open, close: hide, toggle: function () { if (dialog.hidden) open(); else hide(); } };
  }

  global.ConvergePicker = picker;
})(typeof window !== "undefined" ? window : this);
