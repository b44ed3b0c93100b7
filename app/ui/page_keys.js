/* Converge page: Tab out of a Gradio dropdown goes on to the next control and leaves the dropdown closed.
   Gradio's picker handles its keys after a tick, so a Tab reopened the list its blur had just closed; and a list
   long enough to scroll is itself a stop for Tab in Chromium, and focus fell to the page body when the list closed
   under it. A Tab in a picker is kept from Gradio's key handler (its blur still commits what was typed) and its open
   list is taken out of the Tab order. */
(function () {
  "use strict";

  function onTab(event) {
    var box = event.target;
    if (event.key !== "Tab" || !(box instanceof HTMLInputElement) || box.getAttribute("role") !== "combobox") return;
    var list = document.getElementById(box.getAttribute("aria-controls") || "");
    if (list) list.tabIndex = -1;
    event.stopPropagation();  /* not preventDefault: the browser still moves focus on */
  }

  window.addEventListener("keydown", onTab, true);
})();
