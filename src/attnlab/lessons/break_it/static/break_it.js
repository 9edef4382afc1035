// attnlab · break it: after explain.js has written the API's numbers into the page, move the chart's lines to
// the new points and redraw its log-axis ticks and end labels (the lesson computes them; nothing is computed here).
(() => {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const make = (name, attrs, text) => {
    const el = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    if (text !== undefined) el.textContent = text;
    return el;
  };
  document.addEventListener("explain:updated", (event) => {
    const chart = event.detail && event.detail.data && event.detail.data.chart;
    if (!chart) return;
    for (const line of document.querySelectorAll("#break-chart polyline[data-line]")) {
      const data = chart.lines[Number(line.dataset.line)];
      if (data) line.setAttribute("points", data.points);
    }
    const ticks = document.getElementById("break-y-ticks");
    if (ticks && chart.y_ticks) {
      ticks.replaceChildren(...chart.y_ticks.flatMap((tick) => [
        make("line", {x1: chart.x_left, y1: tick.y, x2: chart.x_right, y2: tick.y, stroke: "#e3e3e3"}),
        make("text", {x: chart.x_left - 4, y: tick.y + 3, "text-anchor": "end", "font-size": 13}, tick.label)]));
    }
    const ends = document.getElementById("break-ends");
    if (ends && chart.ends) {
      const old = [...ends.children];
      ends.replaceChildren(...chart.ends.map((end, i) => make("text", {
        x: chart.x_right + 3, y: end.y + 3, "font-size": 13, "font-weight": 700, fill: old[i] ? old[i].getAttribute("fill") : "#222"}, end.label)));
    }
  });
})();
