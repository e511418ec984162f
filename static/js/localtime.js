// Dates and times in the browser's time zone, written the page language's way: every <time data-local>
// (chat_tags.local_time writes them in the server's zone first). "2026年12月6日" in Chinese, "6 Dec 2026"
// in English. The end-date field (input[data-utc]) shows and takes local time; the server gets UTC.
(function () {
  "use strict";
  var lang = document.documentElement.lang || "en";
  var locale = /^zh/i.test(lang) ? "zh-Hans-CN" : "en-GB";
  var formats = {
    date: { year: "numeric", month: "short", day: "numeric" },
    datetime: { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", hour12: false }
  };
  if (/^zh/i.test(lang)) { formats.date.month = "long"; formats.datetime.month = "long"; }
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function localValue(d) {
    return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + "T" + pad(d.getHours()) + ":" + pad(d.getMinutes());
  }
  function apply(root) {
    if (!root || !root.querySelectorAll) return;
    root.querySelectorAll("time[data-local]").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (isNaN(when)) return;
      el.textContent = new Intl.DateTimeFormat(locale, formats[el.dataset.local] || formats.date).format(when);
      el.title = when.toISOString();
    });
    root.querySelectorAll("input[data-utc]").forEach(function (input) {
      if (input.dataset.localised) return;
      input.dataset.localised = "1";
      if (input.value) input.value = localValue(new Date(input.value + "Z"));
      var label = input.id && document.querySelector("label[for='" + input.id + "'][data-local-label]");
      if (label) label.textContent = label.dataset.localLabel;
    });
  }
  // What was typed in local time leaves as UTC ("YYYY-MM-DDTHH:MM", which the server reads as UTC).
  function toUtc(value) {
    var when = new Date(value);
    return isNaN(when) ? value : when.toISOString().slice(0, 16);
  }
  document.addEventListener("htmx:configRequest", function (e) {
    var input = e.detail.elt && e.detail.elt.querySelector && e.detail.elt.querySelector("input[data-utc]");
    if (input && e.detail.parameters.expires_at) e.detail.parameters.expires_at = toUtc(e.detail.parameters.expires_at);
  });
  document.addEventListener("submit", function (e) {
    var input = e.target.querySelector && e.target.querySelector("input[data-utc]");
    if (input && input.value && !e.target.hasAttribute("hx-post")) input.value = toUtc(input.value);
  });
  document.addEventListener("DOMContentLoaded", function () { apply(document); });
  document.addEventListener("htmx:load", function (e) { apply(e.detail.elt); });
})();
