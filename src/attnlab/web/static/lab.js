// attnlab: live forms. Every page works with plain GET forms; this file only saves the reload.
// A <form data-live> is sent with fetch instead of loading a page. The same server-rendered page comes
// back, and each element carrying data-region="name" replaces ours (in base.html, the whole <main>).
// An input or checkbox with data-auto sends its form as it changes. A form's data-announce="#id" names
// the element whose new text is read out to screen readers (through #lab-announce, which stays put).
// After each update the document fires "lab:updated". Numbers are never computed here: they are the
// server's, in its HTML.
(() => {
  "use strict";
  document.documentElement.classList.add("js");

  // The course map (home page, top bar): a topic whose question this browser answered is marked right or wrong
  // (explain.js keeps the answers in localStorage; nothing goes to the server).
  function markMap() {
    let kept = {};
    try { kept = JSON.parse(localStorage.getItem("attnlab.progress") || "{}"); } catch (err) { return; }
    for (const li of document.querySelectorAll(".course-map [data-topic]")) {
      const mark = li.querySelector("[data-mark]");
      const done = kept[li.dataset.topic];
      if (!mark || !done) continue;
      const map = li.closest(".course-map");
      mark.textContent = done.correct ? "✓" : "✗";
      mark.title = done.correct ? map.dataset.right : map.dataset.wrong;
      mark.className = `map-mark ${done.correct ? "right" : "wrong"}`;
      mark.hidden = false;
    }
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", markMap);
  else markMap();

  // Honest rounding (attnlab/display/fmt.py `fixed`, the server's `num`): up to `digits` decimals, but a number that
  // is not whole never shows as a whole one (0.99998 -> "0.99998"; 0.00002 -> "2e−5"); U+2212 minus.
  function strip(text) {
    if (text.includes(".")) text = text.replace(/0+$/, "").replace(/\.$/, "");
    return text === "-0" || text === "" ? "0" : text;
  }
  function fixed(x, digits) {
    let text = strip(x.toFixed(digits));
    if (text.includes(".") || Number.isInteger(x) || !Number.isFinite(x)) return text;
    if (text === "0") {
      const [m, e] = x.toExponential(1).split("e");
      return `${strip(m)}e${parseInt(e, 10)}`;
    }
    for (let more = digits + 1; more <= 12; more++) {
      text = strip(x.toFixed(more));
      if (text.includes(".")) return text;
    }
    return text;
  }
  window.attnlabFixed = fixed;
  window.attnlabNum = (x, digits = 3) => (x === null || x === -Infinity ? "\u2212∞" : x === Infinity ? "∞"
    : Number.isNaN(x) ? "NaN" : fixed(x, digits).replace(/-/g, "\u2212"));
  let latest = 0; // each new request or keystroke makes older responses stale
  const timers = new WeakMap();

  function urlFor(form, submitter) {
    const url = new URL(form.getAttribute("action") || location.pathname, location.href);
    url.search = new URLSearchParams(new FormData(form, submitter)).toString();
    return url;
  }

  async function send(form, submitter) {
    const ticket = ++latest;
    const url = urlFor(form, submitter);
    let response, html;
    try {
      response = await fetch(url, { credentials: "same-origin" });
      html = await response.text();
    } catch (err) {
      location.assign(url); // the server went away: fall back to a plain page load
      return;
    }
    if (ticket !== latest) return;
    swap(new DOMParser().parseFromString(html, "text/html"));
    history.replaceState(null, "", response.url);
    announce(form.dataset.announce);
    document.dispatchEvent(new CustomEvent("lab:updated", { detail: { url: response.url } }));
  }

  function announce(selector) {
    const target = selector && document.querySelector(selector);
    const region = document.getElementById("lab-announce");
    if (target && region) region.textContent = target.textContent.replace(/\s+/g, " ").trim();
  }

  function swap(doc) {
    const open = [...document.querySelectorAll("details[open][id]")].map((d) => d.id); // the reader's own state
    const active = document.activeElement;
    const focusId = active && active !== document.body ? active.id : "";
    const caret = active && typeof active.selectionStart === "number" ? [active.selectionStart, active.selectionEnd] : null;
    for (const fresh of doc.querySelectorAll("[data-region]")) {
      const old = document.querySelector(`[data-region="${CSS.escape(fresh.dataset.region)}"]`);
      if (old) old.replaceWith(document.adoptNode(fresh));
    }
    for (const id of open) {
      const details = document.getElementById(id);
      if (details && details.tagName === "DETAILS") details.open = true;
    }
    if (doc.title) document.title = doc.title;
    const again = focusId && document.getElementById(focusId);
    if (again) {
      again.focus({ preventScroll: true });
      if (caret && typeof again.setSelectionRange === "function") {
        try { again.setSelectionRange(caret[0], caret[1]); } catch (e) { /* not a text field */ }
      }
    }
  }

  const live = (el) => el && el.form && el.form.matches("form[data-live]") ? el.form : null;

  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (!form.matches("form[data-live]")) return;
    event.preventDefault();
    send(form, event.submitter);
  });

  document.addEventListener("change", (event) => {
    const form = live(event.target);
    if (form && event.target.matches("[data-auto]:not([type=text]):not([type=number])")) send(form, null);
  });

  document.addEventListener("input", (event) => {
    const form = live(event.target);
    if (!form || !event.target.matches("input[data-auto][type=text], input[data-auto][type=number]")) return;
    latest++; // a response to an older value must not overwrite what is being typed
    clearTimeout(timers.get(form));
    timers.set(form, setTimeout(() => send(form, null), 160));
  });
})();
