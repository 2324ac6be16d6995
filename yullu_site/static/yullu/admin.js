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

  function keyboardQueue(root, opts) {
    // One list of .y-item cards driven from the keyboard (the review and stale queues): j/k move,
    // Escape leaves a field, confirmed submits; `opts.keys(e, item)` handles the queue's own keys,
    // `opts.confirmText(form, btn)` names the confirmation a button needs (null: none),
    // `opts.leaveField(e)` says whether a key in a field leaves it.
    const items = Array.from(root.querySelectorAll(".y-item"));
    // Where the reviewer was: a rating or a keep reloads the page, and the card after the one just
    // handled now sits at its place (the queue shows what is left), so focus stays there, not on the top.
    const at = "yullu-queue-at:" + root.id;
    let current = 0;
    function mark(n) { current = n; items.forEach(function (o, m) { o.classList.toggle("y-current", m === n); }); }
    function focus(i) {
      if (!items.length) return;
      mark(Math.max(0, Math.min(items.length - 1, i)));
      items[current].focus({ preventScroll: false });
    }
    root.addEventListener("submit", function (e) {
      const btn = e.submitter;
      const text = btn && !btn.dataset.confirmed ? btn.dataset.confirm || opts.confirmText(e.target, btn) : null;
      if (!text) { sessionStorage.setItem(at, String(current)); return; }
      e.preventDefault();
      confirmThen(text, function () { btn.dataset.confirmed = "1"; e.target.requestSubmit(btn); });
    });
    items.forEach(function (el, n) { el.addEventListener("focusin", function () { mark(n); }); });
    document.addEventListener("keydown", function (e) {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const tag = (e.target.tagName || "").toLowerCase();
      if (tag === "input" || tag === "textarea" || tag === "select") {
        if (e.key === "Escape" || opts.leaveField(e)) { e.preventDefault(); e.target.blur(); focus(current); }
        return;
      }
      if (document.querySelector("dialog[open]")) return;
      if (e.key === "j" || e.key === "ArrowDown") { focus(current + 1); e.preventDefault(); }
      else if (e.key === "k" || e.key === "ArrowUp") { focus(current - 1); e.preventDefault(); }
      else if (e.key === "e" && items[current]) { window.location = items[current].dataset.edit; }
      else if (opts.keys(e, items[current])) { e.preventDefault(); }
    });
    const was = Number(sessionStorage.getItem(at)) || 0;
    sessionStorage.removeItem(at);
    focus(was);
  }

  function review() {
    // The review queue: 1–9 and 0 rate (1–5 reject, confirmed), c comments, x selects, u undoes.
    const root = document.getElementById("review");
    if (!root) return;
    keyboardQueue(root, {
      confirmText: function (form, btn) {
        if (!form.matches("[data-rate-form]") || Number(btn.value) > 5) return null;
        return "Reject this memory with " + btn.value + "? It is archived and removed everywhere (restorable from Rejected, or press u to undo).";
      },
      // Enter in a comment would submit its form with the first button (a rejection): leave the
      // field instead, so the next key picks the rating and the comment goes with it.
      leaveField: function (e) { return e.key === "Enter" && e.target.classList.contains("y-comment"); },
      keys: function (e, item) {
        if (/^[0-9]$/.test(e.key) && item) {
          const form = item.querySelector("[data-rate-form]");
          form.requestSubmit(form.querySelector('button[value="' + (e.key === "0" ? "10" : e.key) + '"]'));
          return true;
        }
        if (e.key === "c" && item) { item.querySelector(".y-comment").focus(); return true; }
        if (e.key === "x" && item) { const box = item.querySelector("input[type=checkbox]"); box.checked = !box.checked; return false; }
        if (e.key === "u") { const undo = document.getElementById("undo-form"); if (undo) undo.requestSubmit(); }
        return false;
      },
    });
  }

  function stale() {
    // The Stale queue (code anchors): p keeps (re-pin), s supersedes, r rejects.
    const root = document.getElementById("stale");
    if (!root) return;
    keyboardQueue(root, {
      confirmText: function () { return null; },
      leaveField: function () { return false; },
      keys: function (e, item) {
        if ((e.key === "p" || e.key === "r") && item) {
          const form = item.querySelector("[data-stale-form]");
          form.requestSubmit(form.querySelector('button[data-key="' + e.key + '"]'));
          return true;
        }
        if (e.key === "s" && item) {
          item.querySelector("details").open = true;
          // The old text, selected: what the reviewer types replaces it (an arrow key keeps it to amend).
          // Focus alone put the caret before it, so the correction was typed in front of the old text.
          const box = item.querySelector(".y-supersede");
          box.focus();
          box.select();
          return true;
        }
        return false;
      },
    });
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
