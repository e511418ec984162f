// Settings → Memory, and the "Memory updated" notices of the chat page. htmx does the requests;
// this file adds keyboard and focus handling, a character counter, and de-duplicates notices.
(function () {
  "use strict";
  if (window.memoraMemoryLoaded) return; // the chat page may include the poller more than once
  window.memoraMemoryLoaded = true;

  var STATUS_SECONDS = 6;

  // --- Notices: a run may arrive both pushed and polled; show each run once per page ---
  var seenRuns = {};
  document.addEventListener("htmx:oobBeforeSwap", function (e) {
    var fragment = e.detail.fragment;
    if (!fragment || !fragment.querySelectorAll) return;
    fragment.querySelectorAll("[data-memory-run]").forEach(function (notice) {
      var run = notice.getAttribute("data-memory-run");
      if (seenRuns[run]) notice.remove();
      seenRuns[run] = true;
    });
    // A conversation marker may arrive both pushed (socket) and polled: keep the first.
    fragment.querySelectorAll(".conversation-marker[id]:not([data-replace])").forEach(function (marker) {
      if (document.getElementById(marker.id)) marker.remove();
    });
  });

  // --- Under a reply, "Used N memories": focus follows Wrong (its question), Delete and Outdated (their
  // outcome) and Cancel (back to Wrong); Escape cancels the question ---
  document.addEventListener("htmx:afterSwap", function (e) {
    var item = document.querySelector(".reply-memory [data-reply-focus]");
    if (!item) return;
    item.removeAttribute("data-reply-focus");
    if (window.htmx) window.htmx.process(item.closest(".reply-memory"));
    item.focus();
  });
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape" || !e.target.closest) return;
    var cancel = e.target.closest(".reply-memory-confirm");
    cancel = cancel && cancel.querySelector("[data-cancel]");
    if (!cancel) return;
    e.preventDefault();
    e.stopPropagation();
    cancel.click();
  }, true);

  var page = document.querySelector(".memory-page");
  if (!page) return;

  // --- Refused writes (400), validation answers (422) and conflicts (409) carry a fragment to show ---
  document.addEventListener("htmx:beforeSwap", function (e) {
    var status = e.detail.xhr.status;
    if ((status === 400 || status === 422 || status === 409) && page.contains(e.detail.elt)) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });

  // --- Focus follows the action: into a new form, back to the row, or to the list ---
  var lastRowIndex = -1;
  var lastFocusedId = "";
  // Only this page's own controls move focus: the notice poller's requests and swaps every few
  // seconds must neither overwrite what was focused nor decide where focus goes.
  function ownSwap(e) { var elt = e.detail.elt; return elt && elt.id !== "memory-notice-poller" && page.contains(elt); }
  document.addEventListener("htmx:beforeRequest", function (e) {
    if (!ownSwap(e)) return;
    var row = e.detail.elt.closest && e.detail.elt.closest(".memory-row");
    var list = row && row.parentElement;
    lastRowIndex = row ? Array.prototype.indexOf.call(list.children, row) : -1;
    var active = document.activeElement;
    lastFocusedId = active && active.id && !active.closest(".memory-row") ? active.id : "";
  });
  function focusSoon(el) {
    if (!el || el === document.activeElement) return; // never move the caret of a field in use
    // Focus comes on swap, before htmx wires new content on settle: wire its form now, so a quick
    // Enter or Escape acts in place rather than as a full-page form submission.
    if (window.htmx) window.htmx.process(el.closest("form") || el);
    el.focus();
    if (el.tagName === "TEXTAREA") { var n = el.value.length; el.setSelectionRange(n, n); }
  }
  // On swap, not settle: the new content is usable (and may be typed into) as soon as it is swapped.
  document.addEventListener("htmx:afterSwap", function (e) {
    if (e.detail.elt && e.detail.elt.id === "memory-notice-poller") return;
    var target = e.detail.elt;
    var auto = page.querySelector("[data-autofocus]:not([data-focused])");
    if (auto) { auto.setAttribute("data-focused", ""); focusSoon(auto); return; }
    var refocus = page.querySelector(".memory-row[data-refocus]");
    if (refocus) { refocus.removeAttribute("data-refocus"); focusSoon(refocus.querySelector("[data-row-focus]")); return; }
    if (document.activeElement && document.activeElement !== document.body && document.contains(document.activeElement)) return;
    // The control that was used was swapped for a fresh copy of itself (the Memory switch).
    var same = lastFocusedId && document.getElementById(lastFocusedId);
    if (same) { focusSoon(same); return; }
    // The focused element went away (a row was deleted or a section re-rendered).
    if (target && target.querySelector) {
      var inTarget = target.matches(".memory-row") && document.contains(target) ? target : null;
      if (inTarget) { focusSoon(inTarget.querySelector("[data-row-focus]")); return; }
    }
    var rows = document.querySelectorAll("#memory-list > .memory-row");
    var next = rows[Math.min(Math.max(lastRowIndex, 0), rows.length - 1)];
    focusSoon(next ? next.querySelector("[data-row-focus]") : document.getElementById("memory-active-title"));
  });

  // Swapped-in content is wired by htmx on settle. A control focused before that (by htmx keeping focus
  // on a control it swapped, or by a quick keyboard user) would submit its form as a full page: wire it now.
  page.addEventListener("focusin", function (e) {
    var form = e.target.closest && e.target.closest("form");
    if (form && window.htmx) window.htmx.process(form);
  });

  // --- Escape cancels an edit or a confirmation ---
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape" || !e.target.closest) return;
    var box = e.target.closest(".memory-row, #memory-forget");
    var cancel = box && box.querySelector("[data-cancel]");
    if (!cancel) return;
    e.preventDefault();
    e.stopPropagation();
    // Focus arrives on swap, possibly before htmx has wired the new buttons: wire them first, so
    // Escape cancels in place rather than by a full-page form post.
    if (window.htmx) window.htmx.process(box);
    cancel.click();
  }, true);

  // --- Ctrl/Cmd+Enter saves; a live character count ---
  document.addEventListener("keydown", function (e) {
    // Not while an input method is composing (Chinese, Japanese): that Enter confirms the characters.
    if (e.isComposing || e.keyCode === 229) return;
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && e.target.tagName === "TEXTAREA" && e.target.form && page.contains(e.target)) {
      e.preventDefault();
      e.target.form.requestSubmit();
    }
  });
  function count(textarea) {
    var out = page.querySelector('[data-counter-for="' + textarea.id + '"]');
    if (!out) return;
    var limit = parseInt(textarea.getAttribute("data-limit"), 10);
    var length = textarea.value.trim().replace(/\s+/g, " ").length;
    out.textContent = length ? length.toLocaleString() + " / " + limit.toLocaleString() : "";
    out.classList.toggle("is-over", length > limit);
  }
  document.addEventListener("input", function (e) { if (e.target.hasAttribute && e.target.hasAttribute("data-limit")) count(e.target); });
  function countAll() { page.querySelectorAll("textarea[data-limit]").forEach(count); }
  document.addEventListener("htmx:afterSettle", countAll);
  countAll();

  // A "Review" link names a memory (#memory-<id>): CSS highlights it (:target); focus goes to it too.
  var target = /^#memory-\d+$/.test(location.hash) && document.querySelector(location.hash + ".memory-row");
  // A link naming several (?review=12,13) highlights them all (.is-reviewed); focus goes to the first.
  if (target) {
    target.scrollIntoView({ block: "center" });
    var control = target.querySelector("[data-row-focus]") || target;
    // The browser focuses the fragment's element itself once it has loaded (after this script), which
    // would take focus from the control: the row takes that focus, and hands it on to its control.
    target.setAttribute("tabindex", "-1");
    target.addEventListener("focus", function (e) {
      if (e.target === target && control !== target) control.focus({ preventScroll: true });
    });
    control.focus({ preventScroll: true });
  }

  // A step opened without JavaScript's help (e.g. after a full-page form post) gets focus too.
  var initial = page.querySelector("[data-autofocus]");
  if (initial) { initial.setAttribute("data-focused", ""); focusSoon(initial); }

  // --- The status line fades after a while ---
  var statusTimer = null;
  function scheduleStatusClear() {
    var status = document.getElementById("memory-status");
    if (!status || !status.textContent.trim()) return;
    clearTimeout(statusTimer);
    statusTimer = setTimeout(function () {
      var s = document.getElementById("memory-status");
      if (s) s.textContent = "";
    }, STATUS_SECONDS * 1000);
  }
  document.addEventListener("htmx:afterSettle", scheduleStatusClear);
  scheduleStatusClear();
})();
