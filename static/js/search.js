// The sidebar's search: "/" or Ctrl+K (⌘K) focuses the box; while a search is typed its results (fetched by
// htmx, debounced, see chat/_search_form.html) take the conversation list's place; Escape clears the
// search and brings the list back. Without JavaScript the box is a plain form that opens /search/.
(function () {
  "use strict";

  function $(selector) { return document.querySelector(selector); }

  function showResults(show) {
    var results = $("#search-results"), nav = $(".conversation-nav"), filter = $(".sidebar-filter");
    if (!results || !nav) return;
    results.hidden = !show;
    nav.hidden = show;
    if (filter) filter.hidden = show; // the title filter narrows the list, which the results replace
  }

  function clearSearch() {
    var input = $("#search-input"), results = $("#search-results"), status = $("#search-status");
    if (!input) return;
    input.value = "";
    if (results) results.innerHTML = "";
    if (status) status.textContent = gettext("Search cleared: your conversations are listed again.");
    showResults(false);
  }

  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }

  document.addEventListener("keydown", function (e) {
    var input = $("#search-input");
    if (!input) return;
    var shortcut = (e.key === "k" || e.key === "K") && (e.ctrlKey || e.metaKey) && !e.altKey;
    if (shortcut || (e.key === "/" && !e.ctrlKey && !e.metaKey && !e.altKey && !typing(e.target))) {
      e.preventDefault();
      var shell = $(".shell"), toggle = $(".sidebar-open");
      // On a phone the sidebar is closed: open it first (chat.js owns it).
      if (shell && shell.dataset.sidebar !== "open" && toggle && toggle.offsetParent) toggle.click();
      input.focus();
      input.select();
      return;
    }
    // Escape in a search that has text clears it (and nothing else: not the sidebar, not a running reply).
    if (e.key === "Escape" && e.target === input && input.value) {
      e.preventDefault();
      e.stopImmediatePropagation();
      clearSearch();
    }
  }, true);

  document.addEventListener("input", function (e) {
    if (e.target.id === "search-input" && !e.target.value.trim()) clearSearch();
  });

  document.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.target && e.detail.target.id === "search-results") {
      var input = $("#search-input");
      showResults(Boolean(input && input.value.trim()));
    }
  });
  // A reply from before the box was emptied must not bring the results back.
  document.addEventListener("htmx:beforeSwap", function (e) {
    var input = $("#search-input");
    if (e.detail.target && e.detail.target.id === "search-results" && input && !input.value.trim()) {
      e.detail.shouldSwap = false;
    }
  });
})();
