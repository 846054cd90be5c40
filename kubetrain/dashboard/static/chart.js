// A line chart in SVG, one line per series: what the job page draws for each metric.
// x is the point's order in its series (the lines a replica printed, across restarts), y its value.
// Each line carries its values in data-values, so a test (or a curious user) can read them.

const SVG = "http://www.w3.org/2000/svg";
export const COLORS = [
  "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
  "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
];

function el(name, attrs, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
  if (parent) parent.appendChild(node);
  return node;
}

// Round tick values: 1, 2 or 5 times a power of ten, about `count` of them over [lo, hi].
export function ticks(lo, hi, count) {
  if (!(hi > lo)) {
    const pad = Math.abs(lo) * 0.1 || 1;
    lo -= pad;
    hi += pad;
  }
  const raw = (hi - lo) / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) || raw;
  const start = Math.floor(lo / step) * step;
  const end = Math.ceil(hi / step) * step;
  const out = [];
  for (let v = start; v <= end + step / 2; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

export function formatNumber(value) {
  const abs = Math.abs(value);
  if (abs !== 0 && (abs >= 1e5 || abs < 1e-3)) return value.toExponential(1);
  return String(Number(value.toPrecision(4)));
}

// Draw `lines` ([{label, color, values: [y...]}]) into `svg`, replacing what it held.
export function drawChart(svg, lines, options) {
  const width = Math.max(240, options.width || 480);
  const height = options.height || 220;
  const margin = { top: 12, right: 14, bottom: 26, left: 56 };
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("width", String(width));
  svg.setAttribute("height", String(height));
  svg.setAttribute("role", "img");
  const all = lines.flatMap((line) => line.values);
  const longest = Math.max(1, ...lines.map((line) => line.values.length));
  if (!all.length) return;
  const yTicks = ticks(Math.min(...all), Math.max(...all), 5);
  const yLo = yTicks[0];
  const yHi = yTicks[yTicks.length - 1];
  const plotW = width - margin.left - margin.right;
  const plotH = height - margin.top - margin.bottom;
  const x = (i) => margin.left + (longest === 1 ? plotW / 2 : (i / (longest - 1)) * plotW);
  const y = (v) => margin.top + plotH - ((v - yLo) / (yHi - yLo || 1)) * plotH;

  const grid = el("g", { class: "grid" }, svg);
  for (const tick of yTicks) {
    el("line", { x1: margin.left, x2: width - margin.right, y1: y(tick), y2: y(tick) }, grid);
    const label = el("text", { x: margin.left - 6, y: y(tick) + 4, "text-anchor": "end" }, grid);
    label.textContent = formatNumber(tick);
  }
  const xTicks = ticks(1, longest, Math.min(6, longest)).filter((t) => Number.isInteger(t) && t >= 1 && t <= longest);
  for (const tick of xTicks) {
    const label = el("text", { x: x(tick - 1), y: height - 8, "text-anchor": "middle" }, grid);
    label.textContent = String(tick);
  }
  el("line", { class: "axis", x1: margin.left, x2: margin.left, y1: margin.top, y2: margin.top + plotH }, svg);
  el("line", {
    class: "axis", x1: margin.left, x2: width - margin.right, y1: margin.top + plotH, y2: margin.top + plotH,
  }, svg);

  for (const line of lines) {
    const points = line.values.map((v, i) => `${x(i).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    el("polyline", {
      class: "series",
      points,
      stroke: line.color,
      "data-series": line.label,
      "data-values": line.values.join(","),
    }, svg);
    if (line.values.length <= 60) {
      line.values.forEach((v, i) => {
        const dot = el("circle", { cx: x(i).toFixed(1), cy: y(v).toFixed(1), r: 2.5, fill: line.color }, svg);
        const title = el("title", {}, dot);
        title.textContent = `${line.label} #${i + 1}: ${formatNumber(v)}`;
      });
    }
  }
}
