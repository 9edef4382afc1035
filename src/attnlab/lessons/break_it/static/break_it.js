// attnlab · break it: after explain.js has written the API's numbers into the page, move the chart's lines to
// the new points (the lesson computes them; nothing is computed here).
(() => {
  "use strict";
  document.addEventListener("explain:updated", (event) => {
    const chart = event.detail && event.detail.data && event.detail.data.chart;
    if (!chart) return;
    for (const line of document.querySelectorAll("#break-chart polyline[data-line]")) {
      const data = chart.lines[Number(line.dataset.line)];
      if (data) line.setAttribute("points", data.points);
    }
  });
})();
