// The kubetrain dashboard's pages. Plain DOM, no framework, nothing loaded from elsewhere.
// Everything a job, a pod or a log says is put in the page as text (textContent), never as HTML.

import { COLORS, drawChart, formatNumber } from "./chart.js";

const app = document.getElementById("app");
const connection = document.getElementById("connection");
const enc = encodeURIComponent;

// -- small helpers -------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function parseTime(text) {
  if (!text) return null;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? null : ms;
}

export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "";
  const s = Math.max(0, Math.floor(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const hrs = Math.floor(m / 60);
  if (hrs < 24) return `${hrs}h ${m % 60}m`;
  return `${Math.floor(hrs / 24)}d ${hrs % 24}h`;
}

function formatTime(text) {
  const ms = parseTime(text);
  if (ms === null) return "";
  const date = new Date(ms);
  const today = new Date().toDateString() === date.toDateString();
  return today ? date.toLocaleTimeString() : date.toLocaleString();
}

function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return "";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(unit ? 1 : 0)} ${units[unit]}`;
}

function badge(state) {
  return h("span", { class: `badge state-${state || "Pending"}`, "data-state": state || "Pending" }, state || "Pending");
}

// An age (time since `since`) or a duration (from `start` to `end`, or to now while unfinished):
// the ticker below keeps them current.
function age(since) {
  return h("span", { class: "age", "data-since": since || "" }, ageText(since));
}

function ageText(since) {
  const ms = parseTime(since);
  return ms === null ? "" : formatDuration((Date.now() - ms) / 1000);
}

function duration(start, end) {
  return h("span", { class: "duration", "data-start": start || "", "data-end": end || "" }, durationText(start, end));
}

function durationText(start, end) {
  const from = parseTime(start);
  if (from === null) return "";
  const to = parseTime(end);
  return formatDuration(((to === null ? Date.now() : to) - from) / 1000);
}

setInterval(() => {
  for (const node of document.querySelectorAll("[data-since]")) node.textContent = ageText(node.dataset.since);
  for (const node of document.querySelectorAll("[data-start]")) {
    if (!node.dataset.end) node.textContent = durationText(node.dataset.start, "");
  }
}, 1000);

function setConnection(state) {
  connection.dataset.state = state;
  connection.textContent = { live: "live", connecting: "connecting", lost: "reconnecting…", static: "recorded" }[state] || state;
}

function stream(url, handlers) {
  const source = new EventSource(url);
  source.onopen = () => setConnection("live");
  source.onerror = () => setConnection("lost");
  for (const [event, handler] of Object.entries(handlers)) {
    source.addEventListener(event, (message) => handler(JSON.parse(message.data)));
  }
  return source;
}

async function getJSON(url) {
  const response = await fetch(url, { credentials: "same-origin" });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

function jobHref(job) {
  return `/jobs/${enc(job.namespace)}/${enc(job.kind)}/${enc(job.name)}`;
}

function section(id, title, ...content) {
  return h("section", { id, class: "card" }, h("h2", {}, title), ...content);
}

function table(headers, klass) {
  const body = h("tbody");
  const node = h("table", { class: klass || "" }, h("thead", {}, h("tr", {}, headers.map((x) => h("th", {}, x)))), body);
  return { node, body };
}

// -- filters shared by the jobs and history pages -----------------------------------------------

const STATES = ["Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed"];

class Filters {
  constructor(fields, onChange) {
    this.params = new URLSearchParams(location.search);
    this.fields = fields;
    this.selects = {};
    this.onChange = onChange;
    this.node = h("form", { class: "filters", id: "filters" });
    this.node.addEventListener("submit", (event) => event.preventDefault());
    for (const [field, label] of fields) {
      const select = h("select", { id: `filter-${field}`, name: field }, h("option", { value: "" }, `all`));
      select.addEventListener("change", () => this.changed());
      this.selects[field] = select;
      this.node.append(h("label", {}, label, " ", select));
    }
    this.search = h("input", { id: "filter-name", type: "search", placeholder: "name contains…", value: this.params.get("name") || "" });
    this.search.addEventListener("input", () => this.changed());
    this.node.append(h("label", {}, "Name ", this.search));
  }

  value(field) {
    return this.selects[field].value || this.params.get(field) || "";
  }

  // Offer every value seen (and the one asked in the URL), keeping the selection.
  offer(field, values) {
    const select = this.selects[field];
    const wanted = this.value(field);
    const all = [...new Set([...values, ...(wanted ? [wanted] : [])])].sort();
    const present = [...select.options].slice(1).map((o) => o.value);
    if (present.join("\n") !== all.join("\n")) {
      select.replaceChildren(h("option", { value: "" }, "all"), ...all.map((v) => h("option", { value: v }, v)));
    }
    select.value = wanted;
  }

  changed() {
    const params = new URLSearchParams();
    for (const [field] of this.fields) {
      if (this.selects[field].value) params.set(field, this.selects[field].value);
    }
    if (this.search.value) params.set("name", this.search.value);
    this.params = params;
    const query = params.toString();
    window.history.replaceState(null, "", location.pathname + (query ? `?${query}` : ""));
    this.onChange();
  }

  keep(row) {
    for (const [field] of this.fields) {
      const wanted = this.value(field);
      if (wanted && row[field] !== wanted) return false;
    }
    const needle = this.search.value.trim().toLowerCase();
    return !needle || row.name.toLowerCase().includes(needle);
  }
}

// -- the jobs page -------------------------------------------------------------------------------

function replicaTitle(job) {
  return Object.entries(job.replicas || {})
    .map(([type, r]) => `${type}: ${r.active} active, ${r.succeeded} succeeded, ${r.failed} failed` +
      (r.desired !== null && r.desired !== undefined ? ` of ${r.desired}` : ""))
    .join("\n");
}

function jobsPage() {
  document.title = "Jobs · kubetrain";
  document.getElementById("nav-jobs").classList.add("current");
  const rows = new Map();
  const filters = new Filters([["kind", "Kind"], ["namespace", "Namespace"], ["state", "State"]], render);
  const { node, body } = table(
    ["Name", "Kind", "Namespace", "State", "Replicas", "Active", "Succeeded", "Failed", "Age", "Duration"],
    "jobs",
  );
  node.id = "jobs-table";
  const empty = h("p", { class: "muted", id: "jobs-empty" });
  app.replaceChildren(h("div", { class: "page-head" }, h("h1", {}, "Jobs"), filters.node), h("section", { class: "card" }, node, empty));

  function render() {
    const all = [...rows.values()];
    filters.offer("kind", all.map((j) => j.kind));
    filters.offer("namespace", all.map((j) => j.namespace));
    filters.offer("state", [...STATES, ...all.map((j) => j.state)]);
    const shown = all.filter((j) => filters.keep(j)).sort((a, b) => (b.created || "").localeCompare(a.created || "") || a.key.localeCompare(b.key));
    body.replaceChildren(...shown.map((job) => h("tr", { "data-key": job.key, "data-state": job.state, class: "job-row" },
      h("td", {}, h("a", { class: "job-link", href: jobHref(job) }, job.name), job.deleting ? h("span", { class: "muted" }, " (deleting)") : null),
      h("td", {}, job.kind),
      h("td", {}, job.namespace),
      h("td", { title: job.message || "" }, badge(job.state)),
      h("td", { class: "num" }, job.totals.desired),
      h("td", { class: "num active", title: replicaTitle(job) }, job.totals.active),
      h("td", { class: "num succeeded", title: replicaTitle(job) }, job.totals.succeeded),
      h("td", { class: "num failed", title: replicaTitle(job) }, job.totals.failed),
      h("td", {}, age(job.created)),
      h("td", {}, duration(job.started, job.finished)),
    )));
    empty.textContent = all.length === 0
      ? "No jobs yet. Submit one with `kubetrain create -f job.yaml` (or kubectl, or the SDK); it shows here at once."
      : shown.length === 0 ? "No job matches these filters." : "";
  }

  stream("/api/jobs/stream", {
    snapshot(data) {
      rows.clear();
      for (const job of data.jobs) rows.set(job.key, job);
      render();
    },
    jobs(data) {
      for (const job of data.upsert) rows.set(job.key, job);
      for (const key of data.remove) rows.delete(key);
      render();
    },
  });
}

// -- the history page ----------------------------------------------------------------------------

async function historyPage() {
  document.title = "History · kubetrain";
  document.getElementById("nav-history").classList.add("current");
  setConnection("static");
  const filters = new Filters([["kind", "Kind"], ["namespace", "Namespace"], ["state", "Outcome"]], render);
  const { node, body } = table(["Name", "Kind", "Namespace", "Outcome", "Started", "Duration", "Deleted"], "history");
  node.id = "history-table";
  const empty = h("p", { class: "muted", id: "history-empty" });
  app.replaceChildren(h("div", { class: "page-head" }, h("h1", {}, "History"), filters.node),
    h("p", { class: "muted" }, "Every job the plane saw, kept after it finished or was deleted (`kubetrain history`)."),
    h("section", { class: "card" }, node, empty));
  let rows = [];
  let live = new Set();

  function render() {
    filters.offer("kind", rows.map((j) => j.kind));
    filters.offer("namespace", rows.map((j) => j.namespace));
    filters.offer("state", rows.map((j) => j.state));
    const shown = rows.filter((j) => filters.keep(j));
    body.replaceChildren(...shown.map((job) => h("tr", { "data-uid": job.uid, "data-state": job.state, class: "history-row" },
      h("td", {}, h("a", { class: "history-link", href: `/history/${enc(job.uid)}` }, job.name),
        live.has(job.uid) ? h("a", { class: "live-link", href: jobHref(job) }, " live") : null),
      h("td", {}, job.kind),
      h("td", {}, job.namespace),
      h("td", {}, badge(job.state)),
      h("td", {}, formatTime(job.started)),
      h("td", {}, duration(job.started, job.finished || job.deleted || "")),
      h("td", { class: "deleted" }, job.deleted ? formatTime(job.deleted) : "–"),
    )));
    empty.textContent = rows.length === 0 ? "Nothing recorded yet." : shown.length === 0 ? "No job matches these filters." : "";
  }

  const [history, jobs] = await Promise.all([getJSON("/api/history"), getJSON("/api/jobs").catch(() => ({ jobs: [] }))]);
  rows = history.jobs;
  live = new Set(jobs.jobs.map((j) => j.uid));
  if (!history.available) empty.textContent = "No history is kept here (the plane runs with --no-history, or none was recorded yet).";
  render();
}

// -- a job's page (live, or as the history recorded it) ----------------------------------------------

const TIMELINE_COLORS = {
  Created: "#9aa7b4", Running: "#2f7de1", Restarting: "#e8a33d", Suspended: "#b08ad9",
  Succeeded: "#2ca24f", Failed: "#d64545", JobSucceeded: "#2ca24f", JobFailed: "#d64545",
};

function conditionKey(c) {
  return `${c.type}|${c.status}|${c.time}`;
}

class JobView {
  constructor(live) {
    this.live = live;
    this.job = null;
    this.conditions = new Map();
    this.pods = [];
    this.usage = {};
    this.logs = new Map();
    this.series = new Map();
    this.selectedLog = null;
    this.pickedLog = false;
    this.chartsDirty = false;
    this.head = h("div", { id: "job-head", class: "job-head" });
    this.banner = h("div", { id: "job-banner" });
    this.timeline = h("div", { id: "timeline" });
    this.specs = h("div", { id: "specs" });
    this.podsTable = table(["Replica", "Pod", "Phase", "Node", "Address", "Restarts", "Exit codes", "CPU", "Memory"], "pods");
    this.podsTable.node.id = "pods-table";
    this.charts = h("div", { id: "charts", class: "charts" });
    this.chartsEmpty = h("p", { class: "muted", id: "charts-empty" },
      "No metrics yet: lines like `epoch=3 loss=0.48` or JSON lines {\"loss\": 0.48} become curves here.");
    this.logTabs = h("div", { id: "log-tabs", class: "tabs", role: "tablist" });
    this.logText = h("pre", { id: "log", class: "log" });
    this.follow = h("input", { type: "checkbox", id: "log-follow", checked: true });
    this.eventsTable = table(["Time", "Type", "Reason", "Object", "Message", "Count"], "events");
    this.eventsTable.node.id = "events-table";
    // Hidden until the job is known: a page opened on a job that is gone shows the banner only.
    this.body = h("div", { id: "job-body", hidden: true },
      section("conditions", "Conditions", this.timeline),
      section("replicas", "Replicas", this.specs, this.podsTable.node),
      section("metrics", "Metrics", this.chartsEmpty, this.charts),
      section("logs", "Logs", h("div", { class: "log-bar" }, this.logTabs,
        h("label", { class: "follow" }, this.follow, " follow")), this.logText),
      section("events", "Events", this.eventsTable.node),
    );
    app.replaceChildren(this.head, this.banner, this.body);
    window.addEventListener("resize", () => this.drawChartsSoon());
    // A running job's timeline grows with the clock, not only when the job changes.
    setInterval(() => {
      if (this.job && !this.job.finished && !this.job.deleted) this.drawTimeline();
    }, 5000);
  }

  setJob(job) {
    this.job = job;
    this.body.hidden = false;
    for (const c of job.conditions || []) this.conditions.set(conditionKey(c), c);
    document.title = `${job.name} · ${job.kind} · kubetrain`;
    const facts = [
      ["Kind", `${job.kind}${job.apiVersion ? ` (${job.apiVersion})` : ""}`, true],
      ["Namespace", job.namespace],
      ["UID", job.uid, true],
      ["Created", formatTime(job.created)],
      ["Age", age(job.created)],
      ["Started", formatTime(job.started)],
      ["Finished", formatTime(job.finished)],
      ["Duration", duration(job.started, job.finished || job.deleted || "")],
    ];
    if (job.deleted) facts.push(["Deleted", formatTime(job.deleted)]);
    this.head.replaceChildren(
      h("h1", {}, job.name, " ", badge(job.state)),
      h("dl", { class: "facts" }, facts.filter(([, v]) => v !== "" && v !== undefined)
        .map(([k, v, wide]) => h("div", { class: wide ? "fact wide" : "fact" }, h("dt", {}, k), h("dd", {}, v)))),
    );
    this.drawTimeline();
    this.drawSpecs();
  }

  drawTimeline() {
    const transitions = [...this.conditions.values()].filter((c) => parseTime(c.time) !== null)
      .sort((a, b) => parseTime(a.time) - parseTime(b.time));
    const rises = transitions.filter((c) => c.status === "True");
    const start = parseTime(this.job.created) ?? (rises.length ? parseTime(rises[0].time) : null);
    const finished = parseTime(this.job.finished) ?? parseTime(this.job.deleted);
    const end = finished ?? Date.now();
    const bar = h("div", { class: "timeline-bar" });
    if (start !== null && rises.length) {
      const span = Math.max(1, end - start);
      rises.forEach((c, i) => {
        const from = Math.max(start, parseTime(c.time));
        const to = i + 1 < rises.length ? parseTime(rises[i + 1].time) : end;
        const segment = h("div", {
          class: "segment",
          "data-type": c.type,
          title: `${c.type} at ${formatTime(c.time)}${c.message ? `: ${c.message}` : ""}`,
        }, c.type);
        segment.style.flexGrow = String(Math.max(0.02, (to - from) / span));
        segment.style.background = TIMELINE_COLORS[c.type] || "#7f8c9a";
        bar.append(segment);
      });
    }
    const { node, body } = table(["Time", "Condition", "Status", "Reason", "Message"], "conditions");
    node.id = "conditions-table";
    const offset = (c) => (start === null ? "" : `+${formatDuration((parseTime(c.time) - start) / 1000)}`);
    body.replaceChildren(...transitions.map((c) => h("tr", { "data-type": c.type, "data-status": c.status },
      h("td", {}, formatTime(c.time), " ", h("span", { class: "muted" }, offset(c))),
      h("td", {}, c.type), h("td", {}, c.status), h("td", {}, c.reason), h("td", { class: "message" }, c.message))));
    this.timeline.replaceChildren(bar, node);
  }

  drawSpecs() {
    const specs = this.job.specs || [];
    this.specs.replaceChildren(h("ul", { class: "specs" }, specs.map((s) => h("li", {},
      h("strong", {}, s.type), ` × ${s.replicas}`, h("span", { class: "muted" }, ` restartPolicy ${s.restartPolicy || "–"}; `),
      s.containers.map((c) => `${c.name}: ${c.image}`).join(", ")))));
  }

  setPods(pods) {
    this.pods = pods;
    this.drawPods();
  }

  setUsage(usage) {
    this.usage = usage;
    this.drawPods();
  }

  drawPods() {
    const exitCodes = (pod) => (pod.containers || []).map((c) => {
      const code = c.exitCode !== null && c.exitCode !== undefined ? `exit ${c.exitCode}` : c.state === "running" ? "running" : c.reason || c.state || "";
      const last = c.lastExitCode !== null && c.lastExitCode !== undefined ? ` (last exit ${c.lastExitCode})` : "";
      return `${c.init ? "init " : ""}${c.name}: ${code}${last}`;
    }).join("; ");
    this.podsTable.body.replaceChildren(...this.pods.map((pod) => {
      const used = this.usage[pod.uid];
      return h("tr", { "data-pod": pod.name, "data-replica": pod.replica, "data-phase": pod.phase },
        h("td", {}, pod.replica),
        h("td", {}, pod.name, pod.deleting ? h("span", { class: "muted" }, " (deleting)") : null),
        h("td", {}, badge(pod.phase)),
        h("td", {}, pod.node || "–"),
        h("td", { class: "mono" }, pod.address || "–"),
        h("td", { class: "num" }, pod.restarts),
        h("td", { class: "exit-codes" }, exitCodes(pod)),
        h("td", { class: "num cpu" }, used ? `${used.cpu.toFixed(2)} CPU` : "–"),
        h("td", { class: "num memory" }, used ? formatBytes(used.memory) : "–"),
      );
    }));
  }

  setEvents(events) {
    this.eventsTable.body.replaceChildren(...events.map((e) => h("tr", { class: e.type === "Warning" ? "warning" : "" },
      h("td", {}, formatTime(e.time)), h("td", {}, e.type), h("td", {}, e.reason), h("td", { class: "mono" }, e.object),
      h("td", { class: "message" }, e.message), h("td", { class: "num" }, e.count))));
  }

  // -- logs --

  logTab(buffer) {
    return buffer.init ? `${buffer.replica} (${buffer.container})` : buffer.replica + (this.manyContainers(buffer.replica) ? ` (${buffer.container})` : "");
  }

  manyContainers(replica) {
    return new Set([...this.logs.values()].filter((b) => b.replica === replica && !b.init).map((b) => b.container)).size > 1;
  }

  addLogs(chunks) {
    let redraw = false;
    const selectedBefore = this.selectedLog;
    for (const chunk of chunks) {
      let buffer = this.logs.get(chunk.id);
      if (!buffer) {
        buffer = { ...chunk, lines: [] };
        this.logs.set(chunk.id, buffer);
        redraw = true;
      }
      if (chunk.skipped) buffer.lines.push(`… ${chunk.skipped} lines not shown …`);
      buffer.lines.push(...chunk.lines);
      if (chunk.exitCode !== undefined) buffer.exitCode = chunk.exitCode;
      if (buffer.lines.length > 5000) {
        buffer.lines.splice(0, buffer.lines.length - 5000);
        redraw = true;
      }
      if (!redraw && this.logTab(buffer) === this.selectedLog) this.appendLog(chunk);
    }
    if (!this.pickedLog) this.selectedLog = this.defaultTab();
    if (redraw || this.selectedLog !== selectedBefore) this.drawLogs();
  }

  // The lead replica's main container (a master, chief or launcher, else the first by name), until
  // the user picks a tab.
  defaultTab() {
    const lead = (b) => (/^(master|chief|launcher)/.test(b.replica) ? 0 : 1);
    const main = [...this.logs.values()].filter((b) => !b.init)
      .sort((a, b) => lead(a) - lead(b) || a.replica.localeCompare(b.replica));
    const first = main[0] || [...this.logs.values()][0];
    return first ? this.logTab(first) : null;
  }

  tabBuffers(tab) {
    return [...this.logs.values()].filter((b) => this.logTab(b) === tab).sort((a, b) => a.attempt - b.attempt);
  }

  appendLog(chunk) {
    const buffers = this.tabBuffers(this.selectedLog);
    if (buffers[buffers.length - 1]?.id !== chunk.id) {
      this.drawLogs();
      return;
    }
    const atBottom = this.logText.scrollTop + this.logText.clientHeight >= this.logText.scrollHeight - 8;
    const lines = chunk.skipped ? [`… ${chunk.skipped} lines not shown …`, ...chunk.lines] : chunk.lines;
    if (lines.length) this.logText.append(document.createTextNode(lines.join("\n") + "\n"));
    if (this.follow.checked && atBottom) this.logText.scrollTop = this.logText.scrollHeight;
  }

  drawLogs() {
    const tabs = [...new Set([...this.logs.values()].sort((a, b) => Number(a.init) - Number(b.init) || a.replica.localeCompare(b.replica)).map((b) => this.logTab(b)))];
    this.logTabs.replaceChildren(...tabs.map((tab) => {
      const button = h("button", { type: "button", role: "tab", class: "tab", "data-tab": tab, "aria-selected": String(tab === this.selectedLog) }, tab);
      button.addEventListener("click", () => {
        this.pickedLog = true;
        this.selectedLog = tab;
        this.drawLogs();
      });
      return button;
    }));
    const buffers = this.selectedLog === null ? [] : this.tabBuffers(this.selectedLog);
    const text = buffers.map((b) => {
      const header = buffers.length > 1 || b.attempt > 0
        ? `──── attempt ${b.attempt}${b.exitCode !== null && b.exitCode !== undefined ? ` (exit ${b.exitCode})` : ""} ────\n` : "";
      return header + (b.lines.length ? `${b.lines.join("\n")}\n` : "");
    }).join("");
    this.logText.dataset.tab = this.selectedLog || "";
    this.logText.textContent = text || (this.live ? "Waiting for output…" : "No log was recorded.");
    if (this.follow.checked) this.logText.scrollTop = this.logText.scrollHeight;
  }

  // -- metrics --

  addSeries(chunks) {
    for (const chunk of chunks) {
      let series = this.series.get(chunk.id);
      if (!series || chunk.replace) {
        series = { ...chunk, points: [] };
        this.series.set(chunk.id, series);
      }
      series.points.push(...chunk.points);
    }
    this.drawChartsSoon();
  }

  drawChartsSoon() {
    if (this.chartsDirty) return;
    this.chartsDirty = true;
    requestAnimationFrame(() => {
      this.chartsDirty = false;
      this.drawCharts();
    });
  }

  drawCharts() {
    const byName = new Map();
    for (const series of this.series.values()) {
      if (!byName.has(series.name)) byName.set(series.name, []);
      byName.get(series.name).push(series);
    }
    const names = [...byName.keys()].sort((a, b) => Number(!/loss/i.test(a)) - Number(!/loss/i.test(b)) || a.localeCompare(b));
    this.chartsEmpty.hidden = names.length > 0;
    const containers = new Set([...this.series.values()].map((s) => s.container));
    const labels = [...new Set([...this.series.values()].map((s) => `${s.replica}/${s.container}`))].sort();
    const colorOf = (s) => COLORS[labels.indexOf(`${s.replica}/${s.container}`) % COLORS.length];
    const existing = new Map([...this.charts.children].map((card) => [card.dataset.metric, card]));
    const cards = names.map((name) => {
      let card = existing.get(name);
      if (!card) {
        card = h("figure", { class: "chart", "data-metric": name },
          h("figcaption", {}, name), document.createElementNS("http://www.w3.org/2000/svg", "svg"), h("div", { class: "legend" }));
      }
      const list = byName.get(name).sort((a, b) => a.replica.localeCompare(b.replica) || a.container.localeCompare(b.container));
      const lines = list.map((s) => ({
        label: containers.size > 1 ? `${s.replica}/${s.container}` : s.replica,
        color: colorOf(s),
        values: [...s.points].sort((p, q) => p[0] - q[0] || p[1] - q[1]).map((p) => p[2]),
      }));
      const svg = card.querySelector("svg");
      svg.dataset.metric = name;
      drawChart(svg, lines, { width: Math.floor(card.clientWidth || 460) - 2, height: 220 });
      card.querySelector(".legend").replaceChildren(...lines.map((line) => {
        const swatch = h("span", { class: "swatch" });
        swatch.style.background = line.color;
        const last = line.values[line.values.length - 1];
        return h("span", { class: "legend-item", "data-series": line.label }, swatch, line.label,
          h("span", { class: "muted" }, ` ${line.values.length} pts, last ${last === undefined ? "–" : formatNumber(last)}`));
      }));
      return card;
    });
    this.charts.replaceChildren(...cards);
  }

  gone(data) {
    if (!this.job) this.head.replaceChildren(h("h1", {}, data.key.split("/").slice(2).join("/")));
    const link = data.history ? h("a", { href: `/history/${enc(data.history)}`, id: "history-link" }, "its record in the history") : null;
    this.banner.replaceChildren(h("p", { class: "notice", id: "gone" },
      this.job ? "This job was deleted. " : "No such job is running. ",
      link ? ["See ", link, " (logs and curves are kept there)."] : "The history has no record of it."));
  }
}

function jobPage(namespace, kind, name) {
  document.getElementById("nav-jobs").classList.add("current");
  const view = new JobView(true);
  stream(`/api/jobs/${enc(namespace)}/${enc(kind)}/${enc(name)}/stream`, {
    job: (data) => {
      view.banner.replaceChildren();
      view.setJob(data);
    },
    pods: (data) => view.setPods(data),
    events: (data) => view.setEvents(data),
    logs: (data) => view.addLogs(data),
    series: (data) => view.addSeries(data),
    usage: (data) => view.setUsage(data),
    gone: (data) => view.gone(data),
  });
}

async function historyJobPage(uid) {
  document.getElementById("nav-history").classList.add("current");
  setConnection("static");
  let record;
  try {
    record = await getJSON(`/api/history/${enc(uid)}`);
  } catch (error) {
    app.replaceChildren(h("h1", {}, "Not in the history"), h("p", { class: "notice" }, String(error.message)));
    return;
  }
  const view = new JobView(false);
  view.setJob(record.job);
  view.setPods(record.pods);
  view.setEvents(record.events);
  view.addLogs(record.logs);
  view.addSeries(record.series);
  view.banner.replaceChildren(h("p", { class: "notice recorded" },
    record.job.deleted ? `Recorded by the history; the job was deleted ${formatTime(record.job.deleted)}.` : "Recorded by the history."));
}

// -- routing -------------------------------------------------------------------------------------

function route() {
  const parts = location.pathname.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts.length === 0) return jobsPage();
  if (parts[0] === "jobs" && parts.length === 4) return jobPage(parts[1], parts[2], parts[3]);
  if (parts[0] === "history" && parts.length === 1) return historyPage();
  if (parts[0] === "history" && parts.length === 2) return historyJobPage(parts[1]);
  app.replaceChildren(h("h1", {}, "Not found"), h("p", {}, h("a", { href: "/" }, "All jobs")));
  return undefined;
}

route();
