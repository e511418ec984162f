// Memora chat page behaviour. htmx (and its ws extension) does the talking; this file only adds
// what a chat box needs: Enter to send, the streaming state, scrolling, and the mobile sidebar.
(function () {
  "use strict";

  var NEAR_BOTTOM_PX = 120;

  function $(selector, root) { return (root || document).querySelector(selector); }

  // --- Sidebar (collapses behind a toggle on narrow screens) ---
  function setSidebar(open) {
    var shell = $(".shell");
    if (!shell) return;
    shell.dataset.sidebar = open ? "open" : "closed";
    var backdrop = $(".sidebar-backdrop");
    if (backdrop) backdrop.hidden = !open;
    document.querySelectorAll(".sidebar-open").forEach(function (b) { b.setAttribute("aria-expanded", String(open)); });
    if (open) { var first = $("#sidebar a, #sidebar button"); if (first) first.focus(); }
  }
  document.addEventListener("click", function (e) {
    var toggle = e.target.closest("[data-sidebar-toggle]");
    if (toggle) { setSidebar($(".shell").dataset.sidebar !== "open"); return; }
    if (e.target.closest("#stop-btn")) { $("#stop-form").requestSubmit(); return; }
    // Close an open <details> menu when clicking elsewhere.
    document.querySelectorAll("details.menu[open], details.user-menu[open]").forEach(function (d) {
      if (!d.contains(e.target)) d.open = false;
    });
  });
  document.addEventListener("keydown", function (e) {
    if (e.key !== "Escape") return;
    var shell = $(".shell");
    if (shell && shell.dataset.sidebar === "open") { setSidebar(false); $(".sidebar-open").focus(); return; }
    var menu = $("details[open]");
    if (menu) { menu.open = false; menu.querySelector("summary").focus(); return; }
    var renameForm = document.activeElement && document.activeElement.closest("form.rename-form");
    if (renameForm) { renameForm.querySelector("a[hx-get]").click(); return; }
    var chat = $(".chat");
    if (chat && chat.dataset.turn === "streaming") { e.preventDefault(); $("#stop-form").requestSubmit(); }
  });

  // --- Composer: Enter sends, Shift+Enter is a new line; grows with its text ---
  function autosize(textarea) {
    textarea.style.height = "auto";
    textarea.style.height = Math.min(textarea.scrollHeight, window.innerHeight * 0.4) + "px";
  }
  document.addEventListener("keydown", function (e) {
    var textarea = e.target;
    // An Enter that confirms an input method's composition (Chinese, Japanese…) is not a send: browsers
    // flag it isComposing, and some (Safari, older Chrome) only by keyCode 229.
    if (e.key !== "Enter" || e.shiftKey || e.isComposing || e.keyCode === 229 || textarea.tagName !== "TEXTAREA") return;
    if (textarea.id !== "composer-input" && !textarea.hasAttribute("data-enter-submits")) return;
    e.preventDefault();
    if (textarea.value.trim() && canSend()) textarea.form.requestSubmit();
  });
  document.addEventListener("input", function (e) {
    if (e.target.tagName === "TEXTAREA") autosize(e.target);
  });

  // --- Turn state, pushed by the server as #turn-state (idle | streaming | rejected) ---
  var lastDraft = "";
  var socketLost = false;

  function chat() { return $(".chat"); }
  function canSend() { var c = chat(); return !c || c.dataset.turn === "idle"; }

  function applyTurnState() {
    var c = chat(), marker = $("#turn-state");
    if (!c || !marker) return;
    var state = marker.dataset.state;
    var input = $("#composer-input");
    if (state === "rejected") {
      // Nothing was written: give the text back so it is not lost.
      if (input && !input.value) { input.value = lastDraft; autosize(input); }
      state = "idle";
    }
    c.dataset.turn = state;
    var send = $("#composer .send-btn");
    if (send) send.disabled = state !== "idle";
    if (input) input.setAttribute("aria-busy", String(state === "streaming"));
    if (state === "idle" && input && document.activeElement === document.body) input.focus();
  }

  function nearBottom(scroller) {
    return scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < NEAR_BOTTOM_PX;
  }
  function scrollToBottom() {
    var scroller = $("#scroller");
    if (scroller) scroller.scrollTop = scroller.scrollHeight;
  }

  var stick = true;
  document.addEventListener("htmx:wsBeforeMessage", function () {
    var scroller = $("#scroller");
    stick = !scroller || nearBottom(scroller);
  });
  function syncTitle() {
    var title = $(".chat-header .title");
    if (title) document.title = title.textContent + " · Memora";
  }
  document.addEventListener("htmx:afterSettle", syncTitle);
  document.addEventListener("htmx:wsAfterMessage", function () {
    applyTurnState();
    syncTitle();
    if (stick) scrollToBottom();
  });

  document.addEventListener("htmx:wsBeforeSend", function (e) {
    var form = e.target;
    if (form.id === "composer" || form.classList.contains("retry-form")) {
      if (!canSend()) { e.preventDefault(); return; }
      if (form.id === "composer") {
        var input = $("#composer-input");
        if (!input.value.trim()) { e.preventDefault(); return; }
        lastDraft = input.value;
      } else {
        lastDraft = "";  // a retry sends no text: a refusal has nothing to give back
      }
      // Show the reply is on its way at once; the server confirms with the messages.
      chat().dataset.turn = "sending";
      $("#composer .send-btn").disabled = true;
    }
  });
  document.addEventListener("htmx:wsAfterSend", function (e) {
    if (e.target.id === "composer") {
      var input = $("#composer-input");
      input.value = "";
      autosize(input);
      stick = true;
      scrollToBottom();
    }
  });

  document.addEventListener("htmx:wsOpen", function () {
    var c = chat();
    if (socketLost) {
      // The connection dropped (and with it any reply being written): show what was saved.
      window.location.reload();
      return;
    }
    if (c) c.classList.add("is-connected");
    var composer = $("#composer");
    if (composer && composer.hasAttribute("data-autosend")) {
      composer.removeAttribute("data-autosend");
      composer.requestSubmit();
    }
  });
  document.addEventListener("htmx:wsClose", function () {
    var c = chat();
    if (!c) return;
    c.classList.remove("is-connected");
    var live = $("#turn-live");
    if (live) live.dataset.live = "0";
    socketLost = true;
  });
  // A reply being written polls its saved text (_message.html) until the socket is live; from then on
  // the socket streams it (chat/consumers.py), and a poll would only show older text. Pollers marked
  // data-offline-only (memory notices on Redis) are the fallback for a socket without a channel layer.
  document.addEventListener("htmx:beforeRequest", function (e) {
    var live = $("#turn-live");
    if (!live || live.dataset.live !== "1") return;
    if (e.target.matches("article.message[data-status=streaming], [data-offline-only]")) e.preventDefault();
  });
  window.addEventListener("pagehide", function () { socketLost = false; });

  // Only the transcript scrolls to a message: scrollIntoView (and the browser's own jump to #message-N)
  // would also scroll the page around it, taking the header off the top and leaving a band below.
  function showInTranscript(message) {
    var scroller = message.closest(".scroller");
    if (!scroller) return;
    var offset = message.getBoundingClientRect().top - scroller.getBoundingClientRect().top;
    scroller.scrollTop += offset - Math.max(0, (scroller.clientHeight - message.offsetHeight) / 2);
    for (var el = scroller.parentElement; el; el = el.parentElement) { if (el.scrollTop) el.scrollTop = 0; }
    if (document.scrollingElement) document.scrollingElement.scrollTop = 0;
  }

  // The browser's own jump to #message-N comes after this script has run: the page itself never scrolls.
  window.addEventListener("scroll", function () {
    var root = document.scrollingElement;
    if (root && root.scrollTop && document.body.classList.contains("app")) root.scrollTop = 0;
  });

  document.addEventListener("DOMContentLoaded", function () {
    applyTurnState();  // a page opened while a reply is being written offers Stop
    document.querySelectorAll("textarea").forEach(autosize);
    // Opened at a message (a search result, a memory's source): show it, not the end.
    var target = window.location.hash && document.getElementById(window.location.hash.slice(1));
    if (target && target.matches("#messages .message")) { stick = false; showInTranscript(target); }
    else scrollToBottom();
  });
})();
