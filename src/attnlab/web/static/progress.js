// attnlab · a lesson training its models: each model's steps, from /api/explain/{topic}/progress (every number
// comes from the server). Two uses:
//   - a first visit (the page answered 202 with #training): poll, then load the page again once training is done
//     (without JavaScript a <meta refresh> reloads instead);
//   - explain.js, while new settings compute on a live page: window.attnlabProgress.follow(url, onModels, going).
(() => {
  "use strict";

  // The rows of a .training list, as explain_topic.html writes them: label, <progress>, "step / steps 步".
  function showModels(list, models, stepsWord) {
    for (const m of models) {
      let li = list.querySelector(`li[data-model="${CSS.escape(m.name)}"]`);
      if (!li) {
        li = document.createElement("li");
        li.dataset.model = m.name;
        const name = document.createElement("span");
        name.className = "name";
        name.textContent = m.label || m.name;
        const bar = document.createElement("progress");
        const steps = document.createElement("span");
        steps.className = "steps";
        const step = document.createElement("b");
        step.dataset.step = "";
        const total = document.createElement("span");
        total.dataset.steps = "";
        steps.append(step, " / ", total, ` ${stepsWord || ""}`);
        li.append(name, " ", bar, " ", steps);
        list.append(li);
      }
      const bar = li.querySelector("progress");
      bar.max = m.steps;
      bar.value = m.step;
      li.querySelector("[data-step]").textContent = m.step;
      li.querySelector("[data-steps]").textContent = m.steps;
    }
  }

  // Poll `url` every half second while going() is true; onModels(models) each time the lesson reports steps.
  function follow(url, onModels, going) {
    async function tick() {
      if (!going()) return;
      try {
        const data = await (await fetch(url, { headers: { Accept: "application/json" } })).json();
        if (going() && data.status === "training" && (data.models || []).length) onModels(data.models);
      } catch (err) {
        // the server is busy or restarting: the next tick asks again
      }
      if (going()) setTimeout(tick, 500);
    }
    setTimeout(tick, 250);
  }

  window.attnlabProgress = { follow, showModels };

  const box = document.getElementById("training");
  if (!box) return;
  async function poll() {
    let data;
    try {
      const resp = await fetch(box.dataset.progress, { headers: { Accept: "application/json" } });
      data = await resp.json();
    } catch (err) {
      setTimeout(poll, 2000);  // the server is busy or restarting: try again a little later
      return;
    }
    if (data.status !== "training") {
      location.reload();  // done (the page now renders at once), or not running any more (the page starts it)
      return;
    }
    showModels(box.querySelector(".training"), data.models || [], "");
    box.dataset.polled = String(Number(box.dataset.polled || 0) + 1);
    setTimeout(poll, 500);
  }
  setTimeout(poll, 500);
})();
