// charts.js: the console's only script (with the overview's cluster chart
// at the end). For every <figure class="chart"
// data-stats="…"> it polls the policy's counters (a same-origin GET of a
// console page, with the session cookie) every 5 seconds and plots the
// running totals with uPlot (vendored, MIT, see uPlot.LICENSE.txt), so the
// first point already shows what happened before the page was opened.
// No inline script: the page loads this file with the CSP's script-src 'self'.
(function () {
  "use strict";
  var SERIES = [
    ["allowed", "Allowed", "#2e7d32"],
    ["throttled", "Throttled", "#ef6c00"],
    ["rejected", "Rejected", "#c62828"],
    ["observed_would_throttle", "Would have throttled", "#6a1b9a"],
    ["observed_would_reject", "Would have rejected", "#1565c0"],
  ];
  function start(fig) {
    var url = fig.getAttribute("data-stats");
    var data = [[]].concat(SERIES.map(function () { return []; }));
    var width = function () { return Math.max(260, Math.min(fig.clientWidth || 600, 900)); };
    var plot = new uPlot({
      width: width(), height: 200,
      series: [{}].concat(SERIES.map(function (s) { return { label: s[1], stroke: s[2], width: 2 }; })),
      // One sample has no width of its own: show the last minute.
      scales: { x: { time: true, range: function (u, min, max) { return min === max ? [min - 60, max + 5] : [min, max]; } } },
      axes: [{}, { label: "total" }],
    }, data, fig);
    fig.setAttribute("data-ready", "1");
    function tick() {
      fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
        return r.ok ? r.json() : null;
      }).then(function (s) {
        if (!s) return;
        data[0].push(Date.now() / 1000);
        SERIES.forEach(function (k, i) { data[i + 1].push(s[k[0]] || 0); });
        if (data[0].length > 360) data.forEach(function (a) { a.shift(); });
        plot.setData(data);
        fig.setAttribute("data-points", String(data[0].length));
        // The figure carries the latest totals so tests and screen readers
        // can read them without the canvas.
        SERIES.forEach(function (k) { fig.setAttribute("data-" + k[0].replace(/_/g, "-"), String(s[k[0]] || 0)); });
      }).catch(function () {});
    }
    tick();
    setInterval(tick, 5000);
    window.addEventListener("resize", function () { plot.setSize({ width: width(), height: 200 }); });
  }
  // The overview's cluster chart: <figure class="chart" data-metrics="…">
  // polls the cluster-wide totals (every member's, summed) and plots
  // answers per second between two samples.
  // lastMinute shows at least the last minute, so one or two samples are
  // not stretched over an automatic range.
  function lastMinute(u, min, max) {
    var now = Date.now() / 1000;
    min = min == null ? now : min;
    max = max == null ? now : max;
    return [Math.min(min, max - 60), max + 5];
  }
  var RATES = [
    ["requests", "Requests/s", "#1565c0"],
    ["throttled", "Throttled/s (429)", "#ef6c00"],
    ["client_errors", "Client errors/s", "#6a1b9a"],
    ["server_errors", "Server errors/s", "#c62828"],
    ["refused", "Throttle, reject, deny, block decisions/s", "#2e7d32"],
  ];
  // The decisions that refused, whatever their answer's status (most are 200).
  var REFUSING = ["throttle", "reject", "deny", "block"];
  function startMetrics(fig) {
    var url = fig.getAttribute("data-metrics");
    var data = [[]].concat(RATES.map(function () { return []; }));
    var prev = null;
    var width = function () { return Math.max(260, Math.min(fig.clientWidth || 600, 900)); };
    var plot = new uPlot({
      width: width(), height: 200,
      series: [{}].concat(RATES.map(function (s) { return { label: s[1], stroke: s[2], width: 2 }; })),
      scales: { x: { time: true, range: lastMinute } },
      axes: [{}, { label: "per second" }],
    }, data, fig);
    fig.setAttribute("data-ready", "1");
    function tick() {
      fetch(url, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
        return r.ok ? r.json() : null;
      }).then(function (m) {
        if (!m) return;
        var now = Date.now() / 1000;
        var tot = { requests: 0, throttled: 0, client_errors: 0, server_errors: 0, refused: 0 };
        (m.total || []).forEach(function (t) {
          RATES.forEach(function (k) { if (k[0] !== "refused") tot[k[0]] += t[k[0]] || 0; });
          REFUSING.forEach(function (d) { tot.refused += (t.decisions || {})[d] || 0; });
        });
        RATES.forEach(function (k) { fig.setAttribute("data-" + k[0].replace(/_/g, "-"), String(tot[k[0]])); });
        fig.setAttribute("data-answered", String(m.answered) + "/" + String(m.members));
        if (prev) {
          var dt = Math.max(now - prev.at, 0.001);
          data[0].push(now);
          // A restarted member's totals start again: never a negative rate.
          RATES.forEach(function (k, i) { data[i + 1].push(Math.max(0, tot[k[0]] - prev.tot[k[0]]) / dt); });
          if (data[0].length > 360) data.forEach(function (a) { a.shift(); });
          plot.setData(data);
          fig.setAttribute("data-points", String(data[0].length));
        }
        prev = { at: now, tot: tot };
      }).catch(function () {});
    }
    tick();
    setInterval(tick, 5000);
    window.addEventListener("resize", function () { plot.setSize({ width: width(), height: 200 }); });
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (typeof uPlot === "undefined") return;
    Array.prototype.forEach.call(document.querySelectorAll("figure.chart[data-stats]"), start);
    Array.prototype.forEach.call(document.querySelectorAll("figure.chart[data-metrics]"), startMetrics);
  });
})();
