// a2a-wrapper web console: the live parts of its pages. Written for this console (no library,
// no build step); it only swaps in HTML the daemon rendered and reads the task's SSE feed.
"use strict";

function followTask(section) {
  const source = new EventSource(`/console/tasks/${section.dataset.task}/events`);
  const state = document.getElementById("state");
  const status = document.getElementById("status");
  const answer = document.getElementById("answer");
  const steps = document.getElementById("steps");
  source.onmessage = (event) => {
    const data = JSON.parse(event.data);
    if (data.state) {
      state.textContent = data.state;
      state.className = `state ${data.state}`;
    }
    if (data.status !== undefined) status.textContent = data.status;
    if (data.step) {
      // Each progress note while the page is open: its line, and its outcome when known.
      const item = document.createElement("li");
      item.textContent = data.step.text;
      if (data.step.outcome) item.title = JSON.stringify(data.step.outcome);
      steps.appendChild(item);
    }
    if (data.answer !== undefined) answer.textContent = data.answer;
    if (data.append !== undefined) answer.textContent += data.append;
    if (data.reload || data.end) source.close();
    if (data.reload) window.location.reload();
  };
}

function followIndex(live) {
  // The pending approvals, contexts and usage, refreshed while the page is open; a form the
  // user is filling in is left alone.
  setInterval(async () => {
    if (live.contains(document.activeElement) && document.activeElement.tagName === "INPUT") return;
    const response = await fetch(`/console/part${window.location.search}`, { credentials: "same-origin" });
    if (!response.ok) return;
    const html = await response.text();
    if (html !== live.dataset.last) {
      live.dataset.last = html;
      live.innerHTML = html;
    }
  }, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  const task = document.getElementById("task");
  if (task && task.dataset.live) followTask(task);
  const live = document.getElementById("live");
  if (live) followIndex(live);
});
