// The conversation list's own keyboard and focus rules (the markup is chat/_sidebar_nav.html, the order
// chat/sidebar.py): Escape empties the filter box; a rename typed in the list (a refused title comes
// back with its error, 422) and a pin from the list leave focus on that conversation's actions button.
(function () {
  "use strict";

  function $(selector, root) { return (root || document).querySelector(selector); }

  document.addEventListener("keydown", function (e) {
    var input = e.target;
    if (e.key !== "Escape" || !input || input.id !== "sidebar-filter-input" || !input.value) return;
    e.preventDefault();
    e.stopImmediatePropagation();
    input.value = "";
    input.dispatchEvent(new Event("search", { bubbles: true })); // htmx fetches the whole list again
  }, true);

  document.addEventListener("htmx:beforeSwap", function (e) {
    // The list drawn again for a change made elsewhere (chat.sidebar) waits for no one, but it must not
    // take away a title being typed or a menu being read: then this page shows the change on its next load.
    var path = (e.detail.pathInfo && e.detail.pathInfo.requestPath) || "";
    if (e.detail.target && e.detail.target.id === "conversation-nav" && path.indexOf("refresh=1") !== -1 &&
        e.detail.target.querySelector(".conversation-renaming, details[open]")) {
      e.detail.shouldSwap = false;
      return;
    }
    if (e.detail.xhr.status === 422 && e.detail.elt.closest && e.detail.elt.closest(".rename-form-sidebar")) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });

  // A rename or a pin asked for from the list: once its answer is in, focus goes to the title box (the
  // form shown, or given back with its error) or else to that conversation's actions button.
  var returnTo = "";
  document.addEventListener("htmx:beforeRequest", function (e) {
    var elt = e.detail.elt, path = (e.detail.pathInfo && e.detail.pathInfo.requestPath) || "";
    var li = elt.closest && elt.closest("#conversation-nav li.conversation-item, #conversation-nav li.conversation-renaming");
    if (li && /\/(rename|pin)\//.test(path)) returnTo = li.id; // "conversation-<id>"
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    // Only the rename's or pin's own answer: another swap that lands first (the list drawn again for a
    // change pushed meanwhile) must not use up where focus goes once the answer is in.
    var path = (e.detail.pathInfo && e.detail.pathInfo.requestPath) || "";
    if (!returnTo || !/\/(rename|pin)\//.test(path)) return;
    var id = returnTo;
    returnTo = "";
    var box = $("#rename-title-" + id.replace("conversation-", ""));
    if (box) { box.focus(); if (!box.hasAttribute("aria-invalid")) box.select(); return; }
    var actions = $("#" + id + "-actions");
    if (actions) actions.focus();
  });
})();
