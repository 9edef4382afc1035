// attnlab: the pipeline page's live training. Without this file the page still works: the settings form
// posts to /pipeline/train, which trains and redirects to the result.
// With it: the form starts a run through POST /api/train, the run's server-sent events
// (/api/train/{id}/events) draw the loss and p(target) curves as they arrive, Stop sends
// POST /api/train/{id}/stop, and when the run ends the server-rendered result page is swapped in.
// Numbers are the server's; this file only places them on the curve (same scale as the server's SVG).
(() => {
  "use strict";
  let source = null;

  const $ = (sel) => document.querySelector(sel);
  const text = (key) => ($("#pipeline-msgs") || {}).dataset?.[key] || "";

  const num = (x, digits) => window.attnlabNum(x, digits); // lab.js: the same rule as the server's `num`

  function fill(template, fields) {
    return template.replace(/\{(\w+)\}/g, (m, k) => (k in fields ? fields[k] : m));
  }

  function settingsFrom(form) {
    const body = {};
    for (const [key, value] of new FormData(form)) {
      if (key === "lang" || value === "") continue;
      body[key] = key === "corpus" ? value : Number(value);
    }
    body.pace_ms = $("#slow") && $("#slow").checked ? 30 : 0;
    return body;
  }

  function showError(message) {
    const box = $("#train-error");
    if (!box) return;
    box.textContent = message;
    box.hidden = !message;
  }

  // The API answers in English with its own field names; the page says the same problem in its language,
  // naming the fields as the form does: ask the page, given the same settings, for its message.
  async function pageProblem(form) {
    const url = new URL("/pipeline", location.href);
    for (const [key, value] of new FormData(form)) if (value !== "") url.searchParams.set(key, value);
    try {
      const html = await (await fetch(url, { credentials: "same-origin" })).text();
      const box = new DOMParser().parseFromString(html, "text/html").getElementById("settings-problem");
      return box ? box.textContent.trim() : "";
    } catch (err) {
      return "";
    }
  }

  function setBusy(busy) {
    const button = $("#train-button");
    if (button) button.disabled = busy;
  }

  // The chart (pages/pipeline.py `curve`): x = left + plot width * step / steps; the loss panel spans
  // 0 .. max(log|V|, largest loss so far), the p panel 0 .. 1, each with its own ticks.
  function draw(points, steps, floor) {
    const svg = $("#live-curve");
    const g = Object.fromEntries(Object.entries(svg.dataset).map(([k, v]) => [k, Number(v)]));
    const top = Math.max(floor, ...points.map((p) => p.loss));
    const x = (s) => (g.left + g.plotW * s / Math.max(1, steps)).toFixed(1);
    $("#live-loss").setAttribute("points", points
      .map((p) => `${x(p.step)},${(g.lossTop + g.lossH * (1 - p.loss / top)).toFixed(1)}`).join(" "));
    $("#live-p").setAttribute("points", points.filter((p) => p.p_probe !== null)
      .map((p) => `${x(p.step)},${(g.pTop + g.pH * (1 - p.p_probe)).toFixed(1)}`).join(" "));
    for (const tick of svg.querySelectorAll('.tick[data-axis="loss"]')) tick.textContent = num(Number(tick.dataset.frac) * top, 2);
    for (const tick of svg.querySelectorAll('.tick[data-axis="step"]')) tick.textContent = String(Math.round(Number(tick.dataset.frac) * steps));
  }

  // The textbook's own defaults as the grey placeholders (the server sends each radio's data-defaults).
  document.addEventListener("change", (event) => {
    const radio = event.target.closest('input[name="corpus"][data-defaults]');
    if (!radio || !radio.checked) return;
    const defaults = JSON.parse(radio.dataset.defaults);
    for (const [name, value] of Object.entries(defaults)) {
      const input = document.getElementById(`set-${name}`);
      if (input) input.placeholder = String(value);
    }
  });

  async function loadResult(runId) {
    const url = new URL("/pipeline", location.href);
    url.searchParams.set("run", runId);
    const lang = document.getElementById("pipeline")?.dataset.lang;
    if (lang && lang !== "zh") url.searchParams.set("lang", lang);
    let html;
    try {
      html = await (await fetch(url, { credentials: "same-origin" })).text();
    } catch (err) {
      location.assign(url);
      return;
    }
    const doc = new DOMParser().parseFromString(html, "text/html");
    const fresh = doc.querySelector('[data-region="main"]');
    const old = document.querySelector('[data-region="main"]');
    if (fresh && old) old.replaceWith(document.adoptNode(fresh));
    if (doc.title) document.title = doc.title;
    history.replaceState(null, "", url);
    const region = document.getElementById("lab-announce");
    const status = document.getElementById("run-status");
    if (region && status) region.textContent = status.textContent.replace(/\s+/g, " ").trim();
    document.dispatchEvent(new CustomEvent("lab:updated", { detail: { url: String(url) } }));
  }

  function follow(runId, steps) {
    if (source) source.close();
    const live = $("#live");
    const status = $("#live-status");
    const floor = Number(document.getElementById("pipeline")?.dataset.uniformLoss || 1);
    const points = [];
    live.hidden = false;
    live.dataset.run = runId;
    $("#stop-button").disabled = false;
    setBusy(true);
    source = new EventSource(`/api/train/${encodeURIComponent(runId)}/events`);
    source.addEventListener("step", (event) => {
      const e = JSON.parse(event.data);
      points.push(e);
      draw(points, e.steps || steps, floor);
      status.dataset.step = e.step;
      status.textContent = fill(text("step"), {
        step: e.step, steps: e.steps, loss: num(e.loss, 4),
        p: e.p_probe === null ? "—" : num(e.p_probe, 3), target: text("target"),
      });
    });
    const finish = (message) => {
      source.close();
      source = null;
      status.textContent = message;
      $("#stop-button").disabled = true;
      setBusy(false);
      loadResult(runId);
    };
    source.addEventListener("done", () => finish(text("done")));
    source.addEventListener("failed", (event) => finish(text("failed") + JSON.parse(event.data).message));
    source.addEventListener("error", () => {
      if (source && source.readyState === EventSource.CLOSED) finish(text("done"));
      // otherwise the browser reconnects by itself and the server continues after Last-Event-ID
    });
  }

  document.addEventListener("submit", async (event) => {
    const form = event.target;
    if (form.id !== "train-form") return;
    event.preventDefault();
    showError("");
    setBusy(true);
    let response, body;
    try {
      response = await fetch("/api/train", {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify(settingsFrom(form)),
      });
      body = await response.json();
    } catch (err) {
      form.submit(); // no API: fall back to the plain form post
      return;
    }
    if (!response.ok) {
      setBusy(false);
      showError(await pageProblem(form) || body.message || String(response.status));
      return;
    }
    follow(body.id, body.steps);
  });

  document.addEventListener("click", async (event) => {
    const button = event.target.closest("#stop-button");
    if (!button) return;
    const runId = $("#live")?.dataset.run;
    if (!runId) return;
    button.disabled = true;
    await fetch(`/api/train/${encodeURIComponent(runId)}/stop`, { method: "POST", credentials: "same-origin" });
    // the event stream then ends with `done` (stopped), which loads the result
  });

  function resume() { // a page loaded while its run still trains follows it
    const root = document.getElementById("pipeline");
    if (root && root.dataset.run && root.dataset.status === "training" && !source) follow(root.dataset.run, 0);
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", resume);
  else resume();
})();
