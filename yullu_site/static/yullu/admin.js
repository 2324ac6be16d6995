/* Yul'lu review UI: charts, the keyboard-driven review queue, local times, live dream status, graph. */
(function () {
  "use strict";
  const COLORS = ["#2563eb", "#16a34a", "#dc2626", "#9333ea", "#d97706"];
  const CATEGORY = { process: "#3b82f6", decision: "#8b5cf6", gotcha: "#ef4444", domain: "#22c55e", style: "#f59e0b", uncategorised: "#9ca3af" };

  // force-graph shows a node's label as HTML (innerHTML): memory text is data, never markup.
  function escapeHtml(text) {
    const div = document.createElement("div");
    div.textContent = String(text);
    return div.innerHTML;
  }

  // <select data-autosubmit> submits its form on change (the admin's CSP forbids inline handlers).
  function autoSubmit() {
    document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
      select.addEventListener("change", function () { select.form.submit(); });
    });
  }

  function charts() {
    if (!window.Chart) return;
    document.querySelectorAll("canvas[data-chart]").forEach(function (canvas) {
      const data = JSON.parse(document.getElementById(canvas.dataset.chart).textContent);
      const names = Object.keys(data.series);
      new window.Chart(canvas, {
        type: data.kind,
        data: {
          labels: data.labels,
          datasets: names.map(function (name, i) {
            return { label: name, data: data.series[name], backgroundColor: COLORS[i % COLORS.length], borderColor: COLORS[i % COLORS.length] };
          }),
        },
        options: {
          maintainAspectRatio: false, animation: false,
          plugins: { legend: { display: names.length > 1 }, tooltip: { mode: "index", intersect: false } },
          scales: { x: { title: { display: true, text: "day (UTC)" } }, y: { beginAtZero: true, ticks: { precision: 0 } } },
        },
      });
    });
  }

  function localTimes() {
    document.querySelectorAll("time.y-local").forEach(function (el) {
      const d = new Date(el.getAttribute("datetime"));
      if (!isNaN(d)) { el.textContent = d.toLocaleString(); el.title = el.getAttribute("datetime"); }
    });
  }

  function confirmThen(text, ok) {
    const dialog = document.getElementById("confirm-dialog");
    if (!dialog || !dialog.showModal) { if (window.confirm(text)) ok(); return; }
    document.getElementById("confirm-text").textContent = text;
    dialog.returnValue = "";
    dialog.onclose = function () { if (dialog.returnValue === "ok") ok(); };
    dialog.showModal();
    document.getElementById("confirm-ok").focus();
  }

  function review() {
    const root = document.getElementById("review");
    if (!root) return;
    const items = Array.from(root.querySelectorAll(".y-item"));
    let current = 0;
    function focus(i) {
      if (!items.length) return;
      current = Math.max(0, Math.min(items.length - 1, i));
      items.forEach(function (el, n) { el.classList.toggle("y-current", n === current); });
      items[current].focus({ preventScroll: false });
    }
    function submitRating(item, value) {
      const form = item.querySelector("[data-rate-form]");
      // Rejections (1–5) are confirmed by the submit handler below.
      form.requestSubmit(form.querySelector('button[value="' + value + '"]'));
    }
    root.addEventListener("submit", function (e) {
      const btn = e.submitter;
      if (!btn || btn.dataset.confirmed) return;
      if (btn.dataset.confirm) {
        e.preventDefault();
        confirmThen(btn.dataset.confirm, function () { btn.dataset.confirmed = "1"; e.target.requestSubmit(btn); });
      } else if (e.target.matches("[data-rate-form]") && Number(btn.value) <= 5) {
        e.preventDefault();
        confirmThen("Reject this memory with " + btn.value + "? It is archived and removed everywhere (restorable from Rejected, or press u to undo).", function () { btn.dataset.confirmed = "1"; e.target.requestSubmit(btn); });
      }
    });
    items.forEach(function (el, n) { el.addEventListener("focusin", function () { current = n; items.forEach(function (o, m) { o.classList.toggle("y-current", m === n); }); }); });
    document.addEventListener("keydown", function (e) {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const tag = (e.target.tagName || "").toLowerCase();
      if (tag === "input" || tag === "textarea" || tag === "select") {
        // Enter in a comment would submit its form with the first button (a rejection): leave the
        // field instead, so the next key picks the rating and the comment goes with it.
        if (e.key === "Escape" || (e.key === "Enter" && e.target.classList.contains("y-comment"))) {
          e.preventDefault(); e.target.blur(); focus(current);
        }
        return;
      }
      if (document.querySelector("dialog[open]")) return;
      const item = items[current];
      if (e.key === "j" || e.key === "ArrowDown") { focus(current + 1); e.preventDefault(); }
      else if (e.key === "k" || e.key === "ArrowUp") { focus(current - 1); e.preventDefault(); }
      else if (/^[0-9]$/.test(e.key) && item) { submitRating(item, e.key === "0" ? "10" : e.key); e.preventDefault(); }
      else if (e.key === "c" && item) { item.querySelector(".y-comment").focus(); e.preventDefault(); }
      else if (e.key === "e" && item) { window.location = item.dataset.edit; }
      else if (e.key === "x" && item) { const box = item.querySelector("input[type=checkbox]"); box.checked = !box.checked; }
      else if (e.key === "u") { const undo = document.getElementById("undo-form"); if (undo) undo.requestSubmit(); }
    });
    focus(0);
  }

  function stale() {
    // The Stale queue (code anchors): j/k move, p keeps (re-pin), e edits, s supersedes, r rejects.
    const root = document.getElementById("stale");
    if (!root) return;
    const items = Array.from(root.querySelectorAll(".y-item"));
    let current = 0;
    function focus(i) {
      if (!items.length) return;
      current = Math.max(0, Math.min(items.length - 1, i));
      items.forEach(function (el, n) { el.classList.toggle("y-current", n === current); });
      items[current].focus({ preventScroll: false });
    }
    root.addEventListener("submit", function (e) {
      const btn = e.submitter;
      if (!btn || btn.dataset.confirmed || !btn.dataset.confirm) return;
      e.preventDefault();
      confirmThen(btn.dataset.confirm, function () { btn.dataset.confirmed = "1"; e.target.requestSubmit(btn); });
    });
    items.forEach(function (el, n) { el.addEventListener("focusin", function () { current = n; items.forEach(function (o, m) { o.classList.toggle("y-current", m === n); }); }); });
    document.addEventListener("keydown", function (e) {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const tag = (e.target.tagName || "").toLowerCase();
      if (tag === "input" || tag === "textarea" || tag === "select") {
        if (e.key === "Escape") { e.preventDefault(); e.target.blur(); focus(current); }
        return;
      }
      if (document.querySelector("dialog[open]")) return;
      const item = items[current];
      if (e.key === "j" || e.key === "ArrowDown") { focus(current + 1); e.preventDefault(); }
      else if (e.key === "k" || e.key === "ArrowUp") { focus(current - 1); e.preventDefault(); }
      else if (e.key === "e" && item) { window.location = item.dataset.edit; }
      else if ((e.key === "p" || e.key === "r") && item) {
        const form = item.querySelector("[data-stale-form]");
        form.requestSubmit(form.querySelector('button[data-key="' + e.key + '"]')); e.preventDefault();
      } else if (e.key === "s" && item) {
        const details = item.querySelector("details"); details.open = true;
        item.querySelector(".y-supersede").focus(); e.preventDefault();
      }
    });
    focus(0);
  }

  function dreamStatus() {
    const root = document.getElementById("dreaming");
    if (!root || root.dataset.watch === "") return;
    const since = Number(root.dataset.watch) || 0;
    const live = document.getElementById("dream-live"), text = document.getElementById("dream-live-text");
    const started = Date.now();
    function poll() {
      fetch(root.dataset.statusUrl, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (data) {
        const mine = data.passes.find(function (p) { return since ? p.started >= since : p.running; });
        if (mine) {
          text.textContent = mine.project_id + ": " + mine.phase + " · sessions " + mine.sessions + " · " + mine.ops;
          if (!mine.running) { text.textContent += " — finished; reloading…"; window.location = window.location.pathname; return; }
        } else if (!since) {
          window.location = window.location.pathname; return;
        } else if (Date.now() - started > 60000) {
          text.textContent = "queued, not started yet: is the worker running (yullu serve starts one)?";
        }
        setTimeout(poll, 1500);
      }).catch(function () { setTimeout(poll, 3000); });
    }
    live.hidden = false;
    poll();
  }

  function graph() {
    const el = document.getElementById("graph");
    if (!el || !window.ForceGraph) return;
    fetch(el.dataset.url, { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (data) {
      document.getElementById("graph-info").textContent = data.nodes.length + " memories, " + data.edges.length + " edges (similarity ≥ " + data.threshold + "). Click a node to open it.";
      const links = data.edges.map(function (e) { return { source: e.source, target: e.target, kind: e.kind }; });
      // Kept on the element: tests find the nodes' screen positions through it (graph2ScreenCoords).
      el.yulluGraph = window.ForceGraph()(el)
        .width(el.clientWidth).height(el.clientHeight)
        .graphData({ nodes: data.nodes, links: links })
        .nodeLabel(function (n) { return escapeHtml(n.label); }).nodeRelSize(4)
        .nodeColor(function (n) { return CATEGORY[n.category] || "#9ca3af"; })
        .linkColor(function (l) { return l.kind === "contradicts" ? "#dc2626" : l.kind === "supersedes" ? "#7c3aed" : "#cbd5e1"; })
        .linkWidth(function (l) { return l.kind === "similar" ? 1 : 2; })
        .cooldownTicks(data.nodes.length > 500 ? 60 : 150)
        .onNodeClick(function (n) { window.location = n.url; })
        .onEngineStop(function () { el.dataset.settled = "1"; });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { autoSubmit(); charts(); localTimes(); review(); stale(); dreamStatus(); graph(); });
})();
