/**
 * The contention chart as a self-contained SVG: throughput and requests per acquisition against
 * the number of contenders, one line per library, the ideal serial bound dashed. No chart library.
 */
import type { ContentionResult } from "../scenarios/run-contenders.js";

export interface ChartInput {
  readonly title: string;
  readonly subtitle: string;
  /** Results of one latency model and one key. */
  readonly results: readonly ContentionResult[];
}

interface Series {
  readonly label: string;
  readonly points: readonly { n: number; throughput: number; requests: number }[];
}

const PALETTE = ["#d9480f", "#1c7ed6", "#2b8a3e", "#862e9c", "#e67700", "#495057", "#c2255c"];
const PANEL = { width: 440, height: 300 };
const MARGIN = { left: 64, top: 78, gap: 90, bottom: 96 };

export function contentionChart(input: ChartInput): string {
  const series = groupSeries(input.results);
  const counts = [...new Set(input.results.map((r) => r.contenders))].sort((a, b) => a - b);
  const ideal = counts.map((n) => {
    const atN = input.results.filter((r) => r.contenders === n);
    const mean = atN.reduce((sum, r) => sum + r.acquisitions / r.idealMs, 0) / atN.length;
    return { n, value: mean * 1000 };
  });
  const maxThroughput = Math.max(
    ...ideal.map((p) => p.value),
    ...input.results.map((r) => r.throughputPerSec),
  );
  const throughputTop = niceCeiling(maxThroughput * 1.05);
  const maxRequests = Math.max(...input.results.map((r) => r.requestsPerAcquisition));
  const requestTop = 10 ** Math.ceil(Math.log10(Math.max(10, maxRequests * 1.05)));

  const width = MARGIN.left * 2 + PANEL.width * 2 + MARGIN.gap;
  const height = MARGIN.top + PANEL.height + MARGIN.bottom;
  const xOf = (panelLeft: number, n: number) => {
    const lo = Math.log2(counts[0] ?? 1);
    const hi = Math.log2(counts[counts.length - 1] ?? 2);
    const t = hi === lo ? 0.5 : (Math.log2(n) - lo) / (hi - lo);
    return panelLeft + 20 + t * (PANEL.width - 40);
  };
  const yLinear = (value: number) => MARGIN.top + PANEL.height * (1 - value / throughputTop);
  const yLog = (value: number) =>
    MARGIN.top + PANEL.height * (1 - Math.log10(Math.max(1, value)) / Math.log10(requestTop));

  const left = MARGIN.left;
  const right = MARGIN.left + PANEL.width + MARGIN.gap;
  const parts: string[] = [];
  parts.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="system-ui, sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="${left}" y="26" font-size="16" font-weight="600">${escapeXml(input.title)}</text>`,
    `<text x="${left}" y="46" fill="#495057">${escapeXml(input.subtitle)}</text>`,
  );
  // Panel 1: throughput, linear.
  parts.push(panelFrame(left, "throughput (acquisitions/s), higher is better"));
  for (const tick of linearTicks(throughputTop)) {
    parts.push(gridLine(left, yLinear(tick), String(tick)));
  }
  parts.push(xAxis(left, counts, xOf));
  parts.push(
    polyline(
      ideal.map((p) => [xOf(left, p.n), yLinear(p.value)]),
      "#868e96",
      "6 4",
    ),
  );
  // Panel 2: requests per acquisition, log scale.
  parts.push(panelFrame(right, "requests per acquisition (log), lower is better"));
  for (const tick of logTicks(requestTop)) parts.push(gridLine(right, yLog(tick), String(tick)));
  parts.push(xAxis(right, counts, xOf));
  parts.push(
    polyline(
      counts.map((n) => [xOf(right, n), yLog(2)]),
      "#868e96",
      "6 4",
    ),
  );

  series.forEach((line, index) => {
    const color = PALETTE[index % PALETTE.length]!;
    const throughput = line.points.map((p) => [xOf(left, p.n), yLinear(p.throughput)] as const);
    const requests = line.points.map((p) => [xOf(right, p.n), yLog(p.requests)] as const);
    parts.push(polyline(throughput, color), polyline(requests, color));
    for (const [x, y] of [...throughput, ...requests]) {
      parts.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3" fill="${color}"/>`);
    }
  });

  // Legend, under both panels.
  const legendY = MARGIN.top + PANEL.height + 52;
  const entries = [
    ...series.map((line, index) => ({
      label: line.label,
      color: PALETTE[index % PALETTE.length]!,
      dash: "",
    })),
    {
      label: "ideal serial bound (hold + 1 RTT per hand-off; 2 requests)",
      color: "#868e96",
      dash: "6 4",
    },
  ];
  let x = left;
  let y = legendY;
  for (const entry of entries) {
    const entryWidth = 40 + entry.label.length * 6.6;
    // Wrap to a second row rather than run past the right edge (the bottom margin has room).
    if (x > left && x + entryWidth > width - MARGIN.left / 2) {
      x = left;
      y += 20;
    }
    parts.push(
      `<line x1="${x}" y1="${y}" x2="${x + 22}" y2="${y}" stroke="${entry.color}" stroke-width="2.5"${entry.dash ? ` stroke-dasharray="${entry.dash}"` : ""}/>`,
      `<text x="${x + 28}" y="${y + 4}">${escapeXml(entry.label)}</text>`,
    );
    x += entryWidth;
  }
  parts.push("</svg>");
  return `${parts.join("\n")}\n`;
}

function groupSeries(results: readonly ContentionResult[]): Series[] {
  const byLabel = new Map<string, Series["points"][number][]>();
  for (const r of results) {
    const points = byLabel.get(r.label) ?? [];
    points.push({
      n: r.contenders,
      throughput: r.throughputPerSec,
      requests: r.requestsPerAcquisition,
    });
    byLabel.set(r.label, points);
  }
  return [...byLabel].map(([label, points]) => ({
    label,
    points: points.sort((a, b) => a.n - b.n),
  }));
}

function panelFrame(left: number, title: string): string {
  return [
    `<text x="${left}" y="${MARGIN.top - 12}" font-weight="600">${escapeXml(title)}</text>`,
    `<rect x="${left}" y="${MARGIN.top}" width="${PANEL.width}" height="${PANEL.height}" fill="none" stroke="#adb5bd"/>`,
  ].join("\n");
}

function gridLine(left: number, y: number, label: string): string {
  return [
    `<line x1="${left}" y1="${y.toFixed(1)}" x2="${left + PANEL.width}" y2="${y.toFixed(1)}" stroke="#e9ecef"/>`,
    `<text x="${left - 6}" y="${(y + 4).toFixed(1)}" text-anchor="end" fill="#495057">${label}</text>`,
  ].join("\n");
}

function xAxis(left: number, counts: readonly number[], xOf: (left: number, n: number) => number) {
  const y = MARGIN.top + PANEL.height;
  const ticks = counts.map(
    (n) =>
      `<text x="${xOf(left, n).toFixed(1)}" y="${y + 18}" text-anchor="middle" fill="#495057">${n}</text>`,
  );
  return [
    ...ticks,
    `<text x="${left + PANEL.width / 2}" y="${y + 36}" text-anchor="middle">contenders on one key (N)</text>`,
  ].join("\n");
}

function polyline(
  points: readonly (readonly [number, number])[],
  color: string,
  dash = "",
): string {
  const coords = points.map(([x, y]) => `${x.toFixed(1)},${y.toFixed(1)}`).join(" ");
  return `<polyline points="${coords}" fill="none" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ""}/>`;
}

/** A round tick step giving about five ticks up to `value`: 1, 2 or 5 times a power of ten. */
function niceStep(value: number): number {
  const rough = Math.max(1, value) / 5;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].find((m) => m * magnitude >= rough) ?? 10;
  return step * magnitude;
}

function niceCeiling(value: number): number {
  const step = niceStep(value);
  return Math.ceil(value / step) * step;
}

function linearTicks(top: number): number[] {
  const step = niceStep(top);
  const ticks: number[] = [];
  for (let tick = 0; tick <= top + 1e-9; tick += step) ticks.push(Math.round(tick * 100) / 100);
  return ticks;
}

function logTicks(top: number): number[] {
  const ticks: number[] = [];
  for (let decade = 1; decade <= top; decade *= 10) {
    for (const m of [1, 2, 5]) if (m * decade <= top) ticks.push(m * decade);
  }
  return ticks;
}

function escapeXml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}
