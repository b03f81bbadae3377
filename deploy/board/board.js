// The class board's page: reads api/board every few seconds and draws it.
// Every string from a learner is put in the page with textContent, never as HTML.
"use strict";

const MARKS = { correct: "✓", incorrect: "✗" };
const REFRESH_MS = 3000;

function cell(tag, text, className) {
  const el = document.createElement(tag);
  el.textContent = text;
  if (className) el.className = className;
  return el;
}

function drawGrid(data) {
  const table = document.getElementById("grid");
  table.replaceChildren();
  const head = document.createElement("thead");
  const notebooks = document.createElement("tr");
  const names = document.createElement("tr");
  notebooks.append(cell("th", "", "learner"));
  names.append(cell("th", "learner", "learner"));
  let last = null;
  for (const ex of data.exercises) {
    if (ex.notebook === last) {
      notebooks.lastChild.colSpan += 1;
    } else {
      notebooks.append(cell("th", ex.notebook, "notebook"));
      last = ex.notebook;
    }
    names.append(cell("th", ex.name));
  }
  head.append(notebooks, names);
  const body = document.createElement("tbody");
  for (const learner of data.learners) {
    const row = document.createElement("tr");
    row.append(cell("td", learner.name, "learner"));
    for (const ex of data.exercises) {
      const verdict = learner.marks[ex.name];
      const td = cell("td", MARKS[verdict] || "·", MARKS[verdict] ? verdict : "none");
      td.title = `${learner.name}, ${ex.name}: ${verdict || "not started"}`;
      row.append(td);
    }
    body.append(row);
  }
  const foot = document.createElement("tfoot");
  for (const [key, label] of [["done", "done ✓"], ["stuck", "stuck ✗"], ["not started", "not started ·"]]) {
    const row = document.createElement("tr");
    row.className = "counts";
    row.append(cell("td", label, "learner"));
    for (const ex of data.exercises) row.append(cell("td", String(data.counts[ex.name][key])));
    foot.append(row);
  }
  table.append(head, body, foot);
}

function drawMistakes(data) {
  const table = document.getElementById("mistakes");
  table.replaceChildren();
  const head = document.createElement("tr");
  for (const title of ["learners", "exercise", "mistake", "what they read"]) head.append(cell("th", title));
  table.append(head);
  if (data.mistakes.length === 0) {
    const row = document.createElement("tr");
    const td = cell("td", "No learner is stuck on a named mistake.");
    td.colSpan = 4;
    row.append(td);
    table.append(row);
  }
  for (const m of data.mistakes) {
    const row = document.createElement("tr");
    row.append(cell("td", String(m.learners), "n"), cell("td", m.exercise), cell("td", m.mistake), cell("td", m.message));
    table.append(row);
  }
}

// The hub's login asks a script's request to repeat the _xsrf cookie it set in a header (JupyterHub 4.1+)
function xsrfToken() {
  const match = document.cookie.match(/(?:^|;\s*)_xsrf=([^;]*)/);
  return match ? match[1] : "";
}

async function refresh() {
  const status = document.getElementById("status");
  const started = performance.now();
  try {
    const response = await fetch("api/board", {
      credentials: "same-origin",
      cache: "no-store",
      redirect: "error", // a login redirect here means the session has ended: say so, do not loop
      headers: { "X-XSRFToken": xsrfToken() },
    });
    if (!response.ok) throw new Error(`the board answered ${response.status}`);
    const data = await response.json();
    drawGrid(data);
    drawMistakes(data);
    const time = new Date().toLocaleTimeString();
    status.textContent = `${data.learners.length} learners, ${data.posts} checks received. Updated ${time}.`;
    document.body.dataset.posts = String(data.posts);
    // how long this refresh took (fetch, read, draw) and how many there were: benchmarks/board.py reads them
    document.body.dataset.refreshMs = (performance.now() - started).toFixed(1);
    document.body.dataset.refreshes = String(Number(document.body.dataset.refreshes || 0) + 1);
  } catch (err) {
    status.textContent = `Could not refresh (${err.message}); trying again.`;
  }
}

refresh();
setInterval(refresh, REFRESH_MS);
