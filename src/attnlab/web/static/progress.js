// attnlab · a lesson still training its models: poll /api/explain/{topic}/progress (every number comes from the
// server) and load the page again once training is done. Without JavaScript a <meta refresh> reloads instead.
(() => {
  "use strict";
  const box = document.getElementById("training");
  if (!box) return;
  async function poll() {
    let data;
    try {
      const resp = await fetch(box.dataset.progress, {headers: {Accept: "application/json"}});
      data = await resp.json();
    } catch (err) {
      setTimeout(poll, 2000);  // the server is busy or restarting: try again a little later
      return;
    }
    if (data.status !== "training") {
      location.reload();  // done (the page now renders at once), or not running any more (the page starts it)
      return;
    }
    for (const m of data.models || []) {
      const li = box.querySelector(`li[data-model="${CSS.escape(m.name)}"]`);
      if (!li) continue;
      li.querySelector("progress").value = m.step;
      li.querySelector("[data-step]").textContent = m.step;
    }
    box.dataset.polled = String(Number(box.dataset.polled || 0) + 1);
    setTimeout(poll, 500);
  }
  setTimeout(poll, 500);
})();
