// attnlab · the concept lessons, live. The page works without this file (a GET form and numbers rendered by
// the server). With it, moving a control asks GET /api/explain/{topic} for the lesson's numbers and writes
// them into the page; nothing is computed here, numbers are only formatted (sig() matches the server's).
//
// Markup it understands (lessons/common/explain_macros.html writes the same markup on the server):
//   data-bind="path"      one value (its text, and data-value for numbers; arrays of strings are joined)
//   data-each="path"      an array: its <template> child is cloned per element; inside, paths are relative
//                         to the element, "$.x" starts from the top, "@i" is the index, "@n" the index + 1, "@item" the element
//   data-matrix="path"    a 2-d array as a table; data-rows / data-cols name label arrays, data-top="1" or
//                         "max" colours the cells (a fixed 0..1 scale, or the largest absolute value)
//   data-claims="claims"  the checked claims as a list; data-show="path" hides an element while path is empty
//                         (with data-sticky, once shown it stays: a quiz answer already revealed)
(() => {
  "use strict";
  const form = document.getElementById("explain-form");
  if (!form) return;
  const topic = form.dataset.topic;
  const lang = form.dataset.lang || "zh";
  const problem = form.dataset.problem || "";
  const results = () => document.querySelector("[data-results]");
  let ticket = 0;
  let timer = null;
  let lastData = null;
  let asking = null; // the AbortController of the request in flight: newer settings cancel it (and the server stops training for it)

  // ---------------------------------------------------------------------------------------- formatting
  function sig(x) {
    if (x === null || x === undefined) return "—";
    if (typeof x === "boolean") return x ? "✓" : "✗";
    if (typeof x === "string") return x;
    if (Array.isArray(x)) return x.join("");
    if (Number.isNaN(x)) return "NaN";
    if (!Number.isFinite(x)) return x > 0 ? "∞" : "-∞";
    if (Number.isInteger(x) && Math.abs(x) < 1e15) return x.toLocaleString("en-US");
    const a = Math.abs(x);
    if (a >= 1e-4 && a < 1e6) {  // three significant digits, plain (web/pages/explain.py: sig)
      const digits = Math.max(0, 2 - Math.floor(Math.log10(a)));
      return digits ? window.attnlabFixed(x, digits) : x.toFixed(0); // lab.js: honest, 0.99998 is not "1"
    }
    const [m, e] = x.toExponential(1).split("e");
    const n = parseInt(e, 10);
    return `${m}e${n < 0 ? "-" : "+"}${String(Math.abs(n)).padStart(2, "0")}`;
  }

  function heat(x, top) {
    const a = x === null || !(top > 0) ? 0 : Math.max(0, Math.min(1, x / top));
    return a;
  }

  // ------------------------------------------------------------------------------------------- paths
  function get(ctx, path) {
    if (path === "@i") return ctx.i;
    if (path === "@n") return ctx.i + 1; // a row number as the page shows it: counted from 1
    if (path === "@item") return ctx.item;
    let node;
    let parts = path.split(".");
    if (parts[0] === "$") { node = ctx.root; parts = parts.slice(1); }
    else node = ctx.item !== undefined ? ctx.item : ctx.root;
    for (const raw of parts) {
      const key = raw === "@i" ? ctx.i : raw;
      if (node === null || node === undefined) return undefined;
      node = node[key];
    }
    return node;
  }

  // ------------------------------------------------------------------------------------------ render
  function setValue(el, v) {
    if (typeof v === "number") el.dataset.value = String(v);
    else if (typeof v === "boolean") el.dataset.value = String(v);
    else delete el.dataset.value;
    const text = Array.isArray(v) ? v.join(el.dataset.join || "") : sig(v);
    el.textContent = el.dataset.unit ? `${text} ${el.dataset.unit}` : text;
  }

  function renderMatrix(table, ctx) {
    const m = get(ctx, table.dataset.matrix) || [];
    const rows = table.dataset.rows ? get(ctx, table.dataset.rows) : null;
    const cols = table.dataset.cols ? get(ctx, table.dataset.cols) : null;
    const maxRows = parseInt(table.dataset.maxRows || "100000", 10);
    const maxCols = parseInt(table.dataset.maxCols || "100000", 10);
    let top = null;
    if (table.dataset.top === "max") top = Math.max(0, ...m.flat().map((x) => Math.abs(x)));
    else if (table.dataset.top) top = parseFloat(table.dataset.top);
    const width = Math.min(m.length ? m[0].length : 0, maxCols);
    const head = document.createElement("thead");
    const hr = head.insertRow();
    hr.appendChild(document.createElement("td"));
    for (let j = 0; j < width; j++) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = cols ? cols[j] : String(j + 1); // counted from 1, as the course does
      hr.appendChild(th);
    }
    const body = document.createElement("tbody");
    m.slice(0, maxRows).forEach((row, i) => {
      const tr = body.insertRow();
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = rows ? rows[i] : String(i + 1);
      tr.appendChild(th);
      row.slice(0, maxCols).forEach((x) => {
        const td = tr.insertCell();
        setValue(td, x);
        if (top !== null) {
          const a = heat(x, top);
          td.style.setProperty("--a", a.toFixed(3));
          if (a >= 0.5) td.classList.add("hot");
        }
      });
    });
    table.querySelector("thead")?.replaceWith(head);
    table.querySelector("tbody")?.replaceWith(body);
  }

  // One claim as macros.html's claim_item draws it: ✓ shown, ○ not shown at these settings, ✗ contradicted, each
  // with its status in words (the list's data-words, in the page's language).
  const CLAIM = { shown: ["holds", "✓"], not_shown: ["not-shown", "○"], contradicted: ["fails", "✗"] };

  function renderClaims(list, ctx) {
    const claims = get(ctx, list.dataset.claims) || [];
    const words = JSON.parse(list.dataset.words || "{}");
    list.replaceChildren(...claims.map((c) => {
      const [cls, sign] = CLAIM[c.status] || CLAIM.not_shown;
      const li = document.createElement("li");
      li.className = `claim ${cls}`;
      li.dataset.id = c.id;
      li.dataset.holds = String(c.holds);
      li.dataset.status = c.status;
      const mark = document.createElement("span");
      mark.className = "claim-mark";
      mark.setAttribute("aria-hidden", "true");
      mark.textContent = sign;
      const word = document.createElement("span");
      word.className = "claim-word";
      word.textContent = words[c.status] || c.status;
      const text = document.createElement("span");
      text.className = "text";
      text.textContent = c.text;
      li.append(mark, word, text);
      if (c.versus) {
        const versus = document.createElement("span");
        versus.className = "versus";
        versus.textContent = c.versus;
        li.append(" ", versus);
      }
      if (c.null) {  // its strongest null, as lessons/common/nulls.py measured it
        const nul = document.createElement("span");
        nul.className = "null";
        nul.dataset.null = c.null.name;
        nul.dataset.nullStatus = c.null.status;
        nul.textContent = c.null.line;
        li.append(" ", nul);
      }
      return li;
    }));
  }

  function walk(el, ctx) {
    if (el.tagName === "TEMPLATE") return;
    if (el.dataset.each !== undefined) {
      const items = get(ctx, el.dataset.each) || [];
      const template = el.querySelector(":scope > template");
      [...el.children].forEach((child) => { if (child !== template) child.remove(); });
      items.forEach((item, i) => {
        const clone = template.content.cloneNode(true);
        const sub = { root: ctx.root, item, i };
        [...clone.children].forEach((child) => walk(child, sub));
        el.appendChild(clone);
      });
      return;
    }
    if (el.dataset.show !== undefined) {
      const v = get(ctx, el.dataset.show);
      const empty = v === null || v === undefined || v === false || (Array.isArray(v) && v.length === 0);
      if (empty && el.dataset.sticky !== undefined && !el.hidden) return; // a revealed answer stays revealed
      el.hidden = empty;
    }
    if (el.dataset.bind !== undefined) { setValue(el, get(ctx, el.dataset.bind)); return; }
    if (el.dataset.matrix !== undefined) {
      renderMatrix(el, ctx);
      const caption = el.querySelector(":scope > caption");
      if (caption) walk(caption, ctx);
      return;
    }
    if (el.dataset.claims !== undefined) { renderClaims(el, ctx); return; }
    [...el.children].forEach((child) => walk(child, ctx));
  }

  // --------------------------------------------------------------------------------------- requests
  function query(extra) {
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (k !== "lang") q.append(k, v);
    for (const [k, v] of Object.entries(extra || {})) q.set(k, v);
    return q;
  }

  function withLang(q) {
    const copy = new URLSearchParams(q);
    if (lang !== "zh") copy.set("lang", lang);
    return copy;
  }

  // The API's message is English; a lesson's 422 also carries the sentence in the page's language.
  function localizedMessage(data) {
    const ctx = data && Array.isArray(data.detail) && data.detail[0] && data.detail[0].ctx;
    const text = ctx && ctx.lang === lang && ctx.localized ? ctx.localized : data && data.message;
    return text ? `${problem} ${text}`.trim() : "";
  }

  function showError(message) {
    const box = document.getElementById("explain-error");
    box.textContent = message || "";
    box.hidden = !message;
    results()?.classList.toggle("stale", Boolean(message));
  }

  // A value the field itself rules out (outside min..max, not a number) is reported by the browser's own
  // check, without a request; whatever needs the lesson (d_model divisible by n_heads, memory) is the API's 422.
  function invalidField() {
    for (const el of form.elements) {
      if (el.willValidate && !el.checkValidity()) {
        const label = el.labels && el.labels[0] ? el.labels[0].textContent.replace(/\s+/g, " ").trim() : el.name;
        return `${label}: ${el.validationMessage}`;
      }
    }
    return "";
  }

  // While new settings compute, the old results must not pass for theirs: dimmed at once, put away after
  // PUT_AWAY_MS (a quick lesson answers before that, without a flash) or as soon as the lesson reports training,
  // and the #computing card says so, with each model's steps when it trains.
  const PUT_AWAY_MS = 400;
  let putAway = null;

  function computing(on, mine, q) {
    const res = results(), fig = document.getElementById("figure-card"), box = document.getElementById("computing");
    const busy = document.getElementById("explain-busy");
    clearTimeout(putAway);
    if (busy) busy.hidden = !on;
    res?.classList.toggle("stale", on);
    if (!on) {
      for (const el of [res, fig, box]) if (el) el.hidden = el === box || (el === res && !answered());
      box?.querySelector(".training")?.replaceChildren();
      if (box) { box.querySelector("[data-training]").hidden = true; box.querySelector("[data-plain]").hidden = false; }
      return;
    }
    const hide = () => {
      if (mine !== ticket) return;
      for (const el of [res, fig]) if (el) el.hidden = true;
      if (box) box.hidden = false;
    };
    putAway = setTimeout(hide, PUT_AWAY_MS);
    const progress = window.attnlabProgress;
    if (!progress || !box) return;
    progress.follow(`/api/explain/${topic}/progress?${withLang(q)}`, (models) => {
      hide();
      box.querySelector("[data-plain]").hidden = true;
      box.querySelector("[data-training]").hidden = false;
      progress.showModels(box.querySelector(".training"), models, box.dataset.stepsWord);
    }, () => mine === ticket);
  }

  async function update(extra) {
    const mine = ++ticket;
    const invalid = invalidField();
    if (invalid) { showError(invalid); return null; }
    const q = query(extra);
    if (!results()) { location.assign(`/explain/${topic}?${withLang(q)}`); return null; } // no results yet: the page shows the training
    computing(true, mine, q);
    asking?.abort();
    const controller = new AbortController();
    asking = controller;
    let response, data;
    try {
      response = await fetch(`/api/explain/${topic}?${withLang(q)}`, { credentials: "same-origin", signal: controller.signal });
      data = await response.json();
    } catch (err) {
      if (mine === ticket && err.name !== "AbortError") location.assign(`/explain/${topic}?${withLang(q)}`);
      return null;
    }
    if (mine !== ticket) return null;
    computing(false, mine, q);
    if (!response.ok) { showError(localizedMessage(data) || response.statusText); return null; }
    showError("");
    lastData = data;
    walk(results(), { root: data });
    if (data.verdict) showVerdict(data.verdict);
    const figure = document.getElementById("explain-figure");
    const drawn = new URLSearchParams(q);
    drawn.delete("predict"); // the figure is the run's, whatever the answer
    if (figure) figure.src = `/explain/${topic}/figure.png?${withLang(drawn)}`;
    const page = new URLSearchParams(q);
    page.delete("quiz");
    page.delete("answer");
    history.replaceState(null, "", `/explain/${topic}?${withLang(page)}`);
    document.dispatchEvent(new CustomEvent("explain:updated", { detail: { topic, data } }));
    return data;
  }

  function schedule(delay) {
    showCli();
    clearTimeout(timer);
    ticket++; // a response to an older value must not land after a newer one is asked for
    timer = setTimeout(() => update(), delay);
  }

  // --------------------------------------------------------------------------------------- controls
  // A slider and its number field follow each other. Only the number field has a name: without this script it
  // is what the learner edits and what the form sends (the slider stays hidden, as it could not show its
  // value); here the slider appears, and moving it writes the number. A size spanning powers of two (d_k, n:
  // powers of two read best) gets a slider over log2 of its value, made here.
  function follow(input, slider, toSlider, fromSlider) {
    const sync = () => { slider.value = String(toSlider(Number(input.value))); };
    slider.addEventListener("input", () => { input.value = fromSlider(slider.value); schedule(180); });
    input.addEventListener("input", sync);
    sync();
    slider.hidden = false;
  }
  for (const input of form.querySelectorAll("input[type=number][data-slider]")) {
    const slider = document.getElementById(`${input.id}-slider`);
    if (slider) follow(input, slider, (v) => v, (s) => s);
  }
  for (const input of form.querySelectorAll("input[type=number][data-log]")) {
    const lo = Math.log2(Number(input.min)), hi = Math.log2(Number(input.max));
    const slider = Object.assign(document.createElement("input"), {
      type: "range", id: `${input.id}-slider`, className: "log-slider", min: String(lo), max: String(hi), step: "any",
    });
    slider.setAttribute("aria-label", input.labels[0] ? input.labels[0].textContent : input.name);
    input.insertAdjacentElement("afterend", slider);
    const step = Number(input.step) || 1;
    follow(input, slider, (v) => Math.log2(Math.max(v, Number(input.min))), (s) => {
      const v = Math.round(Math.pow(2, Number(s)) / step) * step;
      return String(Math.min(Number(input.max), Math.max(Number(input.min), v)));
    });
  }

  form.addEventListener("input", (event) => {
    const el = event.target;
    if (el.type === "range") return; // a slider: follow() has written its number field and asked
    if (el.type === "number" || el.type === "text") schedule(350);
  });
  form.addEventListener("change", (event) => {
    const el = event.target;
    if (el.type === "checkbox" || el.tagName === "SELECT") schedule(0);
  });
  form.addEventListener("submit", (event) => { event.preventDefault(); clearTimeout(timer); update(); });

  // A quiz: its answer shows only once the learner has committed one (the API leaves it empty until then).
  for (const quiz of document.querySelectorAll("form[data-quiz]")) {
    quiz.addEventListener("submit", async (event) => {
      event.preventDefault();
      const n = quiz.dataset.quiz;
      const answer = new FormData(quiz).get("answer") || "";
      const data = await update({ quiz: n, answer });
      if (data) document.getElementById(`quiz-${n}-answer`)?.focus();
    });
  }

  // --------------------------------------------------------------------------- the equivalent CLI line
  // The options whose values differ from the defaults, as pages/explain.py's cli_line writes them.
  function shell(v) {
    return v && !/[^A-Za-z0-9_@%+=:,./-]/.test(v) ? v : `'${v.replace(/'/g, "'\\''")}'`;
  }

  function showCli() {
    const code = document.getElementById("explain-cli");
    if (!code) return;
    const words = ["attnlab", "explain", topic];
    for (const el of form.querySelectorAll("[data-option]")) {
      const value = el.type === "checkbox" ? String(el.checked) : el.value;
      const def = el.dataset.default;
      const same = value === def || (value.trim() !== "" && def !== "" && Number(value) === Number(def));
      if (same) continue;
      if (el.type === "checkbox") words.push(el.checked ? el.dataset.option : `--no-${el.dataset.option.slice(2)}`);
      else words.push(el.dataset.option, shell(value));
    }
    code.textContent = words.join(" ");
  }

  // ------------------------------------------------------------------- the question before the answers
  // Nothing measured shows until the learner answers. The answer travels with the settings (a hidden predict
  // field of the form), so the API says right or wrong for each new run (its "verdict"), read from its numbers.
  function answered() { return form.querySelector("input[name=predict]")?.value || ""; }

  function showVerdict(v) {
    const box = document.getElementById("verdict");
    if (!box) return;
    box.querySelector("[data-verdict-head]").textContent = v.head;
    const why = box.querySelector("[data-verdict-why]"), at = v.key_text ? v.key_at : -1;
    if (at < 0) {
      why.textContent = v.why;
    } else { // the one number that carries the lesson, marked as the server marks it
      const mark = document.createElement("mark");
      mark.className = "key";
      mark.dataset.key = v.key;
      mark.textContent = v.key_text;
      why.replaceChildren(v.why.slice(0, at), mark, v.why.slice(at + v.key_text.length));
    }
    box.dataset.correct = String(v.correct);
    box.classList.toggle("right", v.correct);
    box.classList.toggle("wrong", !v.correct);
    box.hidden = false;
    const locked = document.getElementById("ask-locked");
    if (locked) locked.hidden = true;
    remember(v.correct);
  }

  function remember(correct) { // the course map (home page) shows which questions were answered, and how
    try {
      const kept = JSON.parse(localStorage.getItem("attnlab.progress") || "{}");
      kept[topic] = { correct };
      localStorage.setItem("attnlab.progress", JSON.stringify(kept));
    } catch (err) { /* storage off: the map shows no progress */ }
  }
  const given = document.getElementById("verdict");
  if (given && !given.hidden) remember(given.dataset.correct === "true"); // answered without a script (?predict=)

  const askForm = document.getElementById("ask-form");
  askForm?.addEventListener("submit", (event) => {
    const pick = askForm.querySelector("input[name=predict]:checked");
    if (!pick) return; // the browser's own check asks for a choice
    event.preventDefault();
    let field = form.querySelector("input[name=predict]");
    if (!field) {
      field = Object.assign(document.createElement("input"), { type: "hidden", name: "predict" });
      form.prepend(field);
    }
    field.value = pick.value;
    update();
  });

  // -------------------------------------------------------------- the topic chips: the current one in view
  const current = document.querySelector(".topics [aria-current=page]");
  const strip = current?.closest("ul");
  if (strip && strip.scrollWidth > strip.clientWidth) {
    strip.scrollLeft += current.getBoundingClientRect().left - strip.getBoundingClientRect().left - 8;
  }

  window.attnlabExplain = { sig, update, get lastData() { return lastData; } };
})();
