// Memora page behaviour that is not about the live reply (that is chat.js): copy buttons, the
// announcement of a finished reply, notices that stay until dismissed, focus after renaming and
// stopping, the phone sidebar's focus trap, and the start page's suggestions. Everything here is an
// enhancement: without JavaScript the pages work (the copy buttons stay hidden).
(function () {
  "use strict";

  function $(selector, root) { return (root || document).querySelector(selector); }
  function composer() { return $("#composer-input") || $("#start-input"); }

  // --- A form pushed over the WebSocket was rendered without a request, so it has no CSRF token: one
  // submitted before htmx wires it (a quick Enter on a loaded machine) posts natively, and gets the
  // page's token here rather than a 403.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || (form.method || "").toLowerCase() !== "post") return;
    if (form.querySelector('input[name="csrfmiddlewaretoken"]')) {
      if (form.querySelector('input[name="csrfmiddlewaretoken"]').value) return;
    }
    var token;
    try { token = JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"]; } catch (e) { return; }
    if (!token) return;
    var field = form.querySelector('input[name="csrfmiddlewaretoken"]');
    if (!field) {
      field = document.createElement("input");
      field.type = "hidden";
      field.name = "csrfmiddlewaretoken";
      form.appendChild(field);
    }
    field.value = token;
  }, true);

  // --- Copy buttons: on each reply (rendered hidden) and on each code block (added here) ---
  function copyText(text, button) {
    function done() {
      var label = button.textContent;
      button.textContent = gettext("Copied");
      setTimeout(function () { button.textContent = label; }, 1500);
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done, function () { fallbackCopy(text); done(); });
    } else {
      fallbackCopy(text);
      done();
    }
  }
  function fallbackCopy(text) {
    var area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.className = "visually-hidden";
    document.body.appendChild(area);
    area.select();
    try { document.execCommand("copy"); } catch (ignored) { /* nothing more to try */ }
    area.remove();
  }
  function enhance(root) {
    (root || document).querySelectorAll("button[data-copy][hidden]").forEach(function (b) { b.hidden = false; });
    (root || document).querySelectorAll(".code-block:not([data-copy-ready])").forEach(function (block) {
      block.setAttribute("data-copy-ready", "");
      var pre = block.querySelector("pre");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy-btn";
      button.textContent = gettext("Copy");
      // The code block's region label names its language ("Python code"), or is just "Code".
      var what = pre.getAttribute("aria-label");
      button.setAttribute("aria-label", what ? interpolate(gettext("Copy %s"), [what]) : gettext("Copy code"));
      button.dataset.copyCode = "";
      block.appendChild(button);
    });
  }
  document.addEventListener("click", function (e) {
    var button = e.target.closest("[data-copy], [data-copy-code]");
    if (!button) return;
    var source = button.hasAttribute("data-copy-code") ? button.parentElement.querySelector("pre") : $(button.dataset.copy);
    if (source) copyText(source.innerText.replace(/\n+$/, ""), button);
  });

  // --- A finished reply is announced once, in the page's polite live region ---
  function announceFinished() {
    var box = $("#reply-announcer");
    document.querySelectorAll("#messages [data-announce]").forEach(function (message) {
      message.removeAttribute("data-announce");
      if (!box) return;
      var text = message.querySelector(".message-text");
      var problem = message.querySelector(".message-error p, .message-note");
      var status = message.dataset.status;
      var words = status === "complete" ? gettext("Memora replied:") : status === "interrupted" ? gettext("Reply stopped.") : gettext("The reply failed.");
      var parts = [words, text ? text.innerText : "", problem && status !== "complete" ? problem.textContent : ""];
      // One space between words, whatever the markup's line breaks and empty parts.
      box.textContent = parts.join(" ").replace(/\s+/g, " ").trim();
    });
  }

  // --- Notices stay until dismissed, or until the next message is sent ---
  document.addEventListener("click", function (e) {
    var close = e.target.closest(".notice-close");
    if (!close) return;
    close.closest(".notice").remove();
    var input = composer();
    if (input) input.focus();
  });
  document.addEventListener("htmx:wsAfterSend", function (e) {
    if (e.target.id === "composer" || e.target.classList.contains("retry-form")) {
      document.querySelectorAll("#notices .notice").forEach(function (n) { n.remove(); });
    }
  });

  // --- New content is wired at once. htmx wires what it swaps in when it settles (20 ms later): a key
  // pressed sooner (Enter on a pushed form, Escape in a rename box) would reach an element that does
  // nothing yet, or follow its plain link.
  function wireNow(target) {
    var live = target && (target.isConnected ? target : target.id && document.getElementById(target.id));
    if (live && window.htmx) window.htmx.process(live);
  }
  document.addEventListener("htmx:afterSwap", function (e) { wireNow(e.detail.target); });
  document.addEventListener("htmx:oobAfterSwap", function (e) { wireNow(e.detail.target); });

  // --- A swap never takes focus away: an update pushed while the user is on an element it replaces
  // (the title renamed in another tab, or arriving after this tab's own rename; the list drawn again)
  // leaves focus on the new copy of that element. Swaps that move focus on purpose do it as they
  // happen, before this looks.
  function keepFocus(e) {
    var target = e.detail.target, active = document.activeElement;
    if (!target || !active || active === document.body || !target.contains(active)) return;
    var path = [];
    for (var node = active; node !== target; node = node.parentNode) {
      path.unshift(Array.prototype.indexOf.call(node.parentNode.children, node));
    }
    var id = active.id, targetId = target.id, tag = active.tagName;
    queueMicrotask(function () {
      if (document.activeElement && document.activeElement !== document.body && document.activeElement.isConnected) return;
      var again = id ? document.getElementById(id) : null;
      if (!again && targetId) {
        again = document.getElementById(targetId);
        for (var i = 0; again && i < path.length; i++) again = again.children[path[i]];
      }
      if (again && again.tagName === tag) again.focus();
    });
  }
  document.addEventListener("htmx:beforeSwap", keepFocus);
  document.addEventListener("htmx:oobBeforeSwap", keepFocus);

  // --- Focus: back to the composer after a reply stopped by keyboard; the title after renaming ---
  document.addEventListener("htmx:wsAfterMessage", function () {
    enhance();
    announceFinished();
    var chat = $(".chat");
    var active = document.activeElement;
    if (chat && chat.dataset.turn === "idle" && (!active || active === document.body || active.id === "stop-btn")) {
      var input = $("#composer-input");
      if (input) input.focus();
    }
  });
  // A blank title (or a model no longer offered) comes back as the form with its error (422), shown in place.
  document.addEventListener("htmx:beforeSwap", function (e) {
    var inPlace = e.detail.elt.closest && (e.detail.elt.closest("#conversation-title") || e.detail.elt.closest(".model-picker"));
    if (e.detail.xhr.status === 422 && inPlace) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    }
  });
  document.addEventListener("htmx:afterSwap", function (e) {
    enhance(e.detail.elt);
    var title = $("#conversation-title");
    if (!title || !title.contains(e.detail.elt) && e.detail.elt !== title) return;
    if (window.htmx) window.htmx.process(title); // wired before a quick Enter or Escape (htmx does it on settle)
    // The title drawn again for a rename made elsewhere (chat/_sidebar_sync.html) leaves focus alone.
    var asker = e.detail.requestConfig && e.detail.requestConfig.elt;
    if (asker && asker.closest && asker.closest("#sidebar-sync")) return;
    var input = $("#rename-title", title);
    if (input) { input.focus(); if (!input.hasAttribute("aria-invalid")) input.select(); return; }
    var cancelled = (e.detail.pathInfo && e.detail.pathInfo.requestPath || "").indexOf("cancel=") !== -1;
    var target = cancelled ? $("summary", title) : $("h1", title);
    if (target) target.focus();
  });

  // --- The phone sidebar keeps focus inside while it is open ---
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Tab") return;
    var shell = $(".shell"), sidebar = $("#sidebar");
    if (!shell || !sidebar || shell.dataset.sidebar !== "open" || !$(".sidebar-close").offsetParent) return;
    var items = Array.prototype.filter.call(
      sidebar.querySelectorAll("a[href], button:not([disabled]), summary, input, textarea, [tabindex='0']"),
      function (el) { return el.checkVisibility ? el.checkVisibility() : el.offsetParent !== null; }
    );
    if (!items.length) return;
    var first = items[0], last = items[items.length - 1];
    if (!sidebar.contains(document.activeElement)) { e.preventDefault(); first.focus(); }
    else if (e.shiftKey && document.activeElement === first) { e.preventDefault(); last.focus(); }
    else if (!e.shiftKey && document.activeElement === last) { e.preventDefault(); first.focus(); }
  });

  // --- Start page: a suggestion fills the composer, then is sent ---
  document.addEventListener("click", function (e) {
    var suggestion = e.target.closest("button[data-suggestion]");
    var input = $("#start-input");
    if (suggestion && input) input.value = suggestion.value;
  });

  // A control that needs JavaScript and the user's attention first (the new API token's Copy button).
  document.addEventListener("DOMContentLoaded", function () {
    enhance();
    var first = $("[data-focus-on-load]");
    if (first) first.focus();
  });
})();
