// attnlab · the seq2seq lesson: after explain.js has redrawn an attention map from the API's numbers, box the
// cells of the true alignment again (row i's box is at column example.truth[i]). Nothing is computed here.
(() => {
  "use strict";
  function mark(data) {
    const truth = (data && data.example && data.example.truth) || [];
    for (const table of document.querySelectorAll("table[data-truth]")) {
      table.querySelectorAll("tbody tr").forEach((tr, i) => {
        [...tr.querySelectorAll("td")].forEach((td, j) => td.classList.toggle("truth", truth[i] === j));
      });
    }
  }
  document.addEventListener("explain:updated", (event) => mark(event.detail && event.detail.data));
})();
