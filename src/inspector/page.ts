/**
 * The inspector page as strings (plain HTML, CSS, DOM script): no CDN, no build, no token; it
 * calls the JSON API beside it by relative URLs.
 */

export const PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>edgelock inspector</title>
<link rel="stylesheet" href="app.css">
<script src="app.js" defer></script>
</head>
<body>
<header>
  <h1>edgelock inspector</h1>
  <p id="status" role="status" aria-live="polite">Loading…</p>
</header>
<main>
  <section aria-labelledby="controls-title" class="controls">
    <h2 id="controls-title" class="visually-hidden">Controls</h2>
    <label for="refresh-every">Refresh every</label>
    <select id="refresh-every">
      <option value="0">never (manual)</option>
      <option value="2000">2 s</option>
      <option value="5000" selected>5 s</option>
      <option value="15000">15 s</option>
      <option value="60000">60 s</option>
    </select>
    <button type="button" id="refresh-now">Refresh now</button>
    <form id="watch-form">
      <label for="watch-name">Watch by name</label>
      <input id="watch-name" name="name" autocomplete="off" spellcheck="false">
      <button type="submit">Watch</button>
    </form>
  </section>
  <p id="cost"></p>
  <p id="scan"></p>
  <p id="read-only" hidden></p>
  <p id="lag-note" hidden></p>
  <p id="error" role="alert" hidden></p>
  <table id="locks">
    <caption>Locks held or waited for</caption>
    <thead>
      <tr>
        <th scope="col">Name</th>
        <th scope="col">Kind</th>
        <th scope="col">State</th>
        <th scope="col">Holders (owner × holds)</th>
        <th scope="col">Lease left</th>
        <th scope="col">Fencing token</th>
        <th scope="col">Read holds</th>
        <th scope="col">Waiters</th>
        <th scope="col">Hand-offs</th>
        <th scope="col" class="write-only">Actions</th>
      </tr>
    </thead>
    <tbody></tbody>
  </table>
  <div id="queues"></div>
  <div id="semaphores"></div>
  <div id="latches"></div>
  <section id="recent-waits" aria-labelledby="recent-waits-title" hidden>
    <h2 id="recent-waits-title">Recent waits</h2>
    <p id="recent-waits-note"></p>
    <table id="waits">
      <caption>Finished waits of this process's client, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Ended</th>
          <th scope="col">Name</th>
          <th scope="col">Outcome</th>
          <th scope="col">Waited</th>
          <th scope="col">Requests</th>
          <th scope="col">Steps (why each sleep)</th>
        </tr>
      </thead>
      <tbody></tbody>
    </table>
  </section>
  <details id="idle">
    <summary>Idle locks</summary>
    <ul></ul>
  </details>
  <dialog id="confirm" aria-labelledby="confirm-title">
    <form method="dialog">
      <h2 id="confirm-title">Are you sure?</h2>
      <p id="confirm-text"></p>
      <button value="cancel" type="submit">Cancel</button>
      <button value="confirm" type="submit" id="confirm-yes">Confirm</button>
    </form>
  </dialog>
</main>
</body>
</html>
`;

export const PAGE_CSS = `:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 1rem 2rem; }
h1 { font-size: 1.4rem; margin: 0; }
h2 { font-size: 1.1rem; }
header { display: flex; gap: 1rem; align-items: baseline; flex-wrap: wrap; }
.controls { display: flex; gap: .5rem; align-items: center; flex-wrap: wrap; }
.controls form { display: flex; gap: .5rem; align-items: center; margin-left: 1rem; }
table { border-collapse: collapse; margin: 1rem 0; width: 100%; }
caption { text-align: left; font-weight: 600; padding: .25rem 0; }
th, td { border: 1px solid #8884; padding: .3rem .5rem; text-align: left; vertical-align: top; }
thead th { background: #8882; }
td.num { font-variant-numeric: tabular-nums; }
#error { color: #c00; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
body.read-only .write-only { display: none; }
`;

export const PAGE_JS = `"use strict";
(() => {
  const $ = (selector) => document.querySelector(selector);
  const state = { snapshot: null, receivedAt: 0, cursor: "0", names: [], timer: 0, spent: 0, openWaits: new Set() };
  const params = new URLSearchParams(location.hash.slice(1));
  state.names = params.getAll("name");

  function el(tag, text, attributes) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
    return node;
  }
  function seconds(ms) {
    // A latch lives a day by default: hours read better there.
    if (ms >= 7200000) return (ms / 3600000).toFixed(1) + " h";
    return ms >= 10000 ? Math.round(ms / 1000) + " s" : (ms / 1000).toFixed(1) + " s";
  }
  function ms(value) {
    return value < 10000 ? value + " ms" : seconds(value);
  }
  function ago(serverMs) {
    return seconds(Math.max(0, state.snapshot.takenAt - serverMs + (performance.now() - state.receivedAt))) + " ago";
  }
  function leaseText(leaseLeftMs) {
    if (leaseLeftMs === null) return "—";
    const left = leaseLeftMs - (performance.now() - state.receivedAt);
    return left > 0 ? seconds(left) : "expired";
  }
  // A countdown the tick keeps going down.
  function leaseCell(leaseLeftMs) {
    return el("td", leaseText(leaseLeftMs), { class: "num lease", "data-lease": String(leaseLeftMs) });
  }

  async function refresh() {
    clearTimeout(state.timer);
    const query = new URLSearchParams();
    if (state.cursor !== "0") query.set("cursor", state.cursor);
    for (const name of state.names) query.append("name", name);
    try {
      const response = await fetch("api/snapshot?" + query, { headers: { accept: "application/json" } });
      const body = await response.json();
      if (!response.ok) throw new Error(body.error || response.statusText);
      state.snapshot = body;
      state.receivedAt = performance.now();
      state.spent += body.cost.total;
      $("#error").hidden = true;
      render();
    } catch (error) {
      $("#error").textContent = "Refresh failed: " + error.message;
      $("#error").hidden = false;
    }
    await refreshWaits();
    schedule();
  }

  // Recent waits cost no command: the recorder is in the process that serves this page.
  async function refreshWaits() {
    let body = { recording: false };
    try {
      const response = await fetch("api/waits", { headers: { accept: "application/json" } });
      if (response.ok) body = await response.json();
    } catch {}
    $("#recent-waits").hidden = !body.recording;
    if (body.recording) renderWaits(body);
  }

  function renderWaits(body) {
    $("#recent-waits-note").textContent = body.waits.length + " kept (at most " + body.maxWaits +
      ", " + body.maxSteps + " steps each: the first and the last).";
    const rows = body.waits.map((wait) => {
      const outcome = wait.outcome === "acquired" ? (wait.handOff ? "acquired (handed off)" : "acquired") : "not acquired: " + wait.reason;
      return [seconds(Math.max(0, body.takenAt - wait.endedAt)) + " ago", wait.name, outcome,
        ms(wait.waitedMs), wait.requests, stepsCell(wait)];
    });
    const tbody = $("#waits tbody");
    tbody.replaceChildren();
    for (const [i, cells] of rows.entries()) {
      const row = tbody.appendChild(el("tr", null, { "data-wait": String(body.waits[i].id) }));
      cells.forEach((cell, j) => row.append(cell instanceof Node ? cell : el(j === 1 ? "th" : "td", cell, j === 1 ? { scope: "row" } : {})));
    }
    if (rows.length === 0) {
      const row = tbody.appendChild(el("tr"));
      row.append(el("td", "No wait has ended since recording began.", { colspan: "6" }));
    }
  }

  // Expandable; stays open across refreshes.
  function stepsCell(wait) {
    const details = el("details", null, { "data-steps": String(wait.id) });
    details.open = state.openWaits.has(wait.id);
    details.addEventListener("toggle", () => {
      if (details.open) state.openWaits.add(wait.id);
      else state.openWaits.delete(wait.id);
    });
    const total = wait.steps.length + wait.droppedSteps;
    details.append(el("summary", total + " step(s)" + (wait.droppedSteps > 0 ? ", " + wait.droppedSteps + " left out" : "")));
    const rows = [];
    wait.steps.forEach((step, i) => {
      const before = wait.steps[i - 1];
      if (before && step.attempt - before.attempt > 1) rows.push(["…", (step.attempt - before.attempt - 1) + " step(s) left out", "", "", "", ""]);
      rows.push([step.attempt, step.answer, ms(step.durationMs), step.holderTtlMs === null ? "—" : ms(step.holderTtlMs),
        ms(step.delayMs), step.why || "—"]);
    });
    details.append(detailTable("Steps of " + wait.name, {}, ["Attempt", "Answer", "Round trip", "Holder's lease left", "Sleeps", "Why"], rows));
    const cell = el("td");
    cell.append(details);
    return cell;
  }

  function schedule() {
    clearTimeout(state.timer);
    const every = Number($("#refresh-every").value);
    // Every refresh is billed: none while the page is not visible.
    if (every > 0 && document.visibilityState === "visible") state.timer = setTimeout(refresh, every);
  }

  function render() {
    const s = state.snapshot;
    document.body.classList.toggle("read-only", !s.canWrite);
    $("#read-only").hidden = s.canWrite;
    $("#read-only").textContent = s.canWrite ? "" : "Read-only: " + (s.readOnlyReason || "no write access");
    $("#lag-note").hidden = !s.lagNote;
    $("#lag-note").textContent = s.lagNote ? "May lag: " + s.lagNote : "";
    $("#status").textContent = s.locks.length + " lock(s), " + s.semaphores.length + " semaphore(s), " +
      s.latches.length + " latch(es) shown, updated " + new Date().toLocaleTimeString();
    $("#cost").textContent = "Last refresh: " + s.cost.total + " command(s) (" + s.cost.scan + " SCAN, " +
      s.cost.read + " read(s)); " + state.spent + " since this page opened.";
    const scan = $("#scan");
    scan.replaceChildren();
    scan.append(s.scan.refused ? "Not scanned: " + s.scan.refused + ". " :
      "Scanned " + s.scan.keysSeen + " key(s) under " + s.prefix + ":{…}" +
      (s.scan.complete ? " (the whole key space)." : " (part of the key space). "));
    if (!s.scan.complete) {
      const more = el("button", "Scan further", { type: "button" });
      more.addEventListener("click", () => { state.cursor = s.scan.cursor; refresh(); });
      scan.append(more);
    } else if (state.cursor !== "0") {
      const restart = el("button", "Scan from the start", { type: "button" });
      restart.addEventListener("click", () => { state.cursor = "0"; refresh(); });
      scan.append(restart);
    }
    if (s.notShown > 0) scan.append(" " + s.notShown + " more not read (maxLocks).");

    const tbody = $("#locks tbody");
    tbody.replaceChildren();
    const queues = $("#queues");
    queues.replaceChildren();
    for (const lock of s.locks) {
      const row = el("tr", null, { "data-lock": lock.name });
      row.append(el("th", lock.name, { scope: "row" }));
      row.append(el("td", lock.kind === "lock" ? "lock (plain or fair)" : "read-write"));
      row.append(el("td", lock.state));
      row.append(el("td", lock.holders.map((h) => h.owner + " × " + h.holds).join(", ") +
        (lock.heldSince ? " (held since " + ago(lock.heldSince) + ")" : "") || "—"));
      row.append(leaseCell(lock.leaseLeftMs));
      row.append(el("td", lock.fencingToken === null ? "—" : lock.fencingToken, { class: "num" }));
      row.append(el("td", lock.readHoldCount, { class: "num" }));
      row.append(el("td", lock.waiterCount, { class: "num" }));
      row.append(el("td", [
        lock.averageHoldMs === null ? null : "avg hold " + Math.round(lock.averageHoldMs) + " ms",
        lock.averageCycleMs === null ? null : "avg cycle " + Math.round(lock.averageCycleMs) + " ms",
      ].filter(Boolean).join(", ") || "—"));
      const actions = el("td", null, { class: "write-only" });
      if (s.canWrite && (lock.holders.length > 0 || lock.readHoldCount > 0)) {
        const button = el("button", "Force-release", { type: "button", "aria-label": "Force-release " + lock.name });
        button.addEventListener("click", () => act("force-release", { name: lock.name, kind: lock.kind },
          "Force-release " + lock.name + "? Its holder loses it at once; a waiter may take it."));
        actions.append(button);
      }
      row.append(actions);
      tbody.append(row);
      if (lock.waiters.length > 0) queues.append(queueTable(lock, s.canWrite));
    }
    if (s.locks.length === 0) {
      const row = el("tr");
      row.append(el("td", "No lock is held or waited for.", { colspan: "10" }));
      tbody.append(row);
    }
    renderSemaphores(s.semaphores);
    $("#latches").replaceChildren(...(s.latches.length === 0 ? [] : [detailTable("Count-down latches",
      { "data-latches": "" }, ["Name", "Count", "Expires in"],
      s.latches.map((latch) => [latch.name, latch.count, leaseCell(latch.ttlLeftMs)]))]));
    const idle = $("#idle ul");
    idle.replaceChildren(...s.idle.map((name) => el("li", name)));
    $("#idle summary").textContent = "Idle names (" + s.idleCount + "): nothing in use, only a fence, a capacity or records left";
  }

  // No actions: docs/inspector.md says why.
  function renderSemaphores(semaphores) {
    const tables = semaphores.length === 0 ? [] : [detailTable("Semaphores", { "data-semaphores": "" },
      ["Name", "State", "Capacity", "Available", "Holds (permits)", "Waiters", "Fencing token", "Average hold"],
      semaphores.map((sem) => [sem.name, sem.state, sem.capacity === null ? "not set" : sem.capacity, sem.available,
        sem.holdCount + " (" + sem.heldPermits + ")", sem.waiterCount, sem.fencingToken === null ? "—" : sem.fencingToken,
        sem.averageHoldMs === null ? "—" : Math.round(sem.averageHoldMs) + " ms"]))];
    for (const sem of semaphores) {
      if (sem.holds.length > 0) tables.push(detailTable("Holds of " + sem.name + " (" + sem.holdCount + ")",
        { "data-holds": sem.name }, ["Owner", "Permits", "Fencing token", "Lease left", "Held since"],
        sem.holds.map((hold) => [hold.owner, hold.permits, hold.fencingToken, leaseCell(hold.leaseLeftMs),
          hold.heldSince === null ? "—" : ago(hold.heldSince)])));
      if (sem.waiters.length > 0) tables.push(detailTable("Waiters of " + sem.name + " (" + sem.waiterCount + " waiting)",
        { "data-waiters": sem.name }, ["Position", "Owner", "Permits", "Waiting since", "Dropped in"],
        sem.waiters.map((waiter) => [waiter.position, waiter.owner, waiter.permits, ago(waiter.waitingSince),
          seconds(waiter.deadlineInMs) + " unless it polls"])));
    }
    $("#semaphores").replaceChildren(...tables);
  }

  function queueTable(lock, canWrite) {
    return detailTable("Queue of " + lock.name + " (" + lock.waiterCount + " waiting)", { "data-queue": lock.name },
      ["Position", "Owner", "Waiting since", "Mode", "Dropped in"].concat(canWrite ? ["Actions"] : []),
      lock.waiters.map((waiter) => {
        const cells = [waiter.position, waiter.owner, ago(waiter.waitingSince), waiter.mode,
          waiter.deadlineInMs === null ? "—" : seconds(waiter.deadlineInMs) + " unless it polls"];
        if (canWrite) {
          const button = el("button", "Remove waiter", { type: "button", "aria-label": "Remove waiter " + waiter.position + " of " + lock.name });
          button.addEventListener("click", () => act("remove-waiter", { name: lock.name, waiter: waiter.waiter },
            "Remove waiter " + waiter.position + " from " + lock.name + "'s queue? Do so only for a waiter that is dead."));
          const cell = el("td");
          cell.append(button);
          cells.push(cell);
        }
        return cells;
      }));
  }

  // A captioned table with column titles; a row's first cell heads it, a node cell goes in as it is.
  function detailTable(caption, attributes, titles, rows) {
    const table = el("table", null, attributes);
    table.append(el("caption", caption));
    const head = table.appendChild(el("thead")).appendChild(el("tr"));
    for (const title of titles) head.append(el("th", title, { scope: "col" }));
    const body = table.appendChild(el("tbody"));
    for (const cells of rows) {
      const row = body.appendChild(el("tr"));
      cells.forEach((cell, i) => row.append(cell instanceof Node ? cell : el(i === 0 ? "th" : "td", cell, i === 0 ? { scope: "row" } : {})));
    }
    return table;
  }

  function act(action, body, question) {
    const dialog = $("#confirm");
    $("#confirm-text").textContent = question;
    dialog.returnValue = "";
    dialog.addEventListener("close", async () => {
      if (dialog.returnValue !== "confirm") return;
      try {
        const response = await fetch("api/" + action, {
          method: "POST",
          headers: { "content-type": "application/json", "x-edgelock-inspector": "1" },
          body: JSON.stringify(body),
        });
        const result = await response.json();
        $("#status").textContent = result.message || result.error;
      } catch (error) {
        $("#status").textContent = action + " failed: " + error.message;
      }
      refresh();
    }, { once: true });
    dialog.showModal();
  }

  function tick() {
    if (state.snapshot === null) return;
    for (const cell of document.querySelectorAll("td.lease")) {
      const lease = cell.getAttribute("data-lease");
      cell.textContent = leaseText(lease === "null" ? null : Number(lease));
    }
  }

  $("#refresh-now").addEventListener("click", refresh);
  $("#refresh-every").addEventListener("change", schedule);
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") refresh();
    else clearTimeout(state.timer);
  });
  $("#watch-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const name = $("#watch-name").value.trim();
    if (name !== "" && !state.names.includes(name)) state.names.push(name);
    $("#watch-name").value = "";
    const hash = new URLSearchParams();
    for (const watched of state.names) hash.append("name", watched);
    history.replaceState(null, "", "#" + hash);
    refresh();
  });
  setInterval(tick, 250);
  refresh();
})();
`;
