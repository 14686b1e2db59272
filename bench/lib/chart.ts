// A hand-written SVG of latency distributions: one panel per series, latency (log scale) by
// percentile on an HdrHistogram-style axis (0%, 90%, 99%, 99.9%...), the target dashed.
import { percentile } from "./stats.js";
import type { LatencySeries } from "./result.js";

const PANEL_W = 440;
const PANEL_H = 250;
const MARGIN = { left: 62, right: 18, top: 34, bottom: 42 };
const COLUMNS = 2;
const COLORS = ["#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"];
const MIN_MS = 0.01;

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => ({ "<": "&lt;", ">": "&gt;", "&": "&amp;", '"': "&quot;", "'": "&apos;" })[c] ?? c);
}

function fmtMs(ms: number): string {
  if (ms >= 100) return ms.toFixed(0);
  if (ms >= 10) return ms.toFixed(1);
  if (ms >= 1) return ms.toFixed(2);
  return ms.toFixed(3);
}

/** Tick values per decade inside [lo, hi]: 1-2-5, or fewer when the range spans many decades. */
function logTicks(lo: number, hi: number): number[] {
  const ticks: number[] = [];
  const decades = Math.log10(hi) - Math.log10(lo);
  const mantissas = decades > 3 ? [1] : decades > 1 ? [1, 3] : [1, 2, 5];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of mantissas) {
      const v = m * 10 ** e;
      if (v >= lo * 0.999 && v <= hi * 1.001) ticks.push(v);
    }
  }
  return ticks;
}

function panel(series: LatencySeries, color: string, x0: number, y0: number): string {
  const sorted = [...series.samplesMs].sort((a, b) => a - b);
  const n = sorted.length;
  const plotW = PANEL_W - MARGIN.left - MARGIN.right;
  const plotH = PANEL_H - MARGIN.top - MARGIN.bottom;
  const parts: string[] = [];
  const title = `${series.name} (n=${n})`;
  parts.push(`<text x="${x0 + MARGIN.left}" y="${y0 + 20}" font-size="13" font-weight="bold">${escapeXml(title)}</text>`);
  if (n === 0) {
    parts.push(`<text x="${x0 + MARGIN.left}" y="${y0 + PANEL_H / 2}" font-size="12">no samples</text>`);
    return parts.join("\n");
  }
  // x: -log10(1 - q), capped at the last sample's rank.
  const xMax = Math.max(1, Math.log10(n));
  const top = Math.max(sorted[n - 1], series.targetMs ?? 0);
  const bottom = Math.max(MIN_MS, Math.min(sorted[0], series.targetMs ?? Infinity));
  const yLo = 10 ** Math.floor(Math.log10(bottom));
  const yHi = 10 ** Math.ceil(Math.log10(Math.max(top, yLo * 10)));
  const px = (x: number): number => x0 + MARGIN.left + (x / xMax) * plotW;
  const py = (ms: number): number =>
    y0 + MARGIN.top + plotH - ((Math.log10(Math.max(ms, MIN_MS)) - Math.log10(yLo)) / (Math.log10(yHi) - Math.log10(yLo))) * plotH;

  parts.push(`<rect x="${px(0)}" y="${y0 + MARGIN.top}" width="${plotW}" height="${plotH}" fill="#fafafa" stroke="#ccc"/>`);
  for (const v of logTicks(yLo, yHi)) {
    const y = py(v).toFixed(1);
    parts.push(`<line x1="${px(0)}" x2="${px(xMax)}" y1="${y}" y2="${y}" stroke="#e4e4e4"/>`);
    parts.push(`<text x="${px(0) - 6}" y="${y}" font-size="10" text-anchor="end" dominant-baseline="middle">${fmtMs(v)}</text>`);
  }
  for (let d = 0; d <= Math.floor(xMax); d++) {
    const x = px(d).toFixed(1);
    const label = d === 0 ? "0%" : `${(100 * (1 - 10 ** -d)).toFixed(Math.max(0, d - 2))}%`;
    parts.push(`<line x1="${x}" x2="${x}" y1="${y0 + MARGIN.top}" y2="${y0 + MARGIN.top + plotH}" stroke="#e4e4e4"/>`);
    parts.push(`<text x="${x}" y="${y0 + MARGIN.top + plotH + 14}" font-size="10" text-anchor="middle">${label}</text>`);
  }
  parts.push(`<text x="${px(xMax / 2)}" y="${y0 + PANEL_H - 6}" font-size="11" text-anchor="middle">percentile</text>`);
  parts.push(
    `<text x="${x0 + 14}" y="${y0 + MARGIN.top + plotH / 2}" font-size="11" text-anchor="middle" transform="rotate(-90 ${x0 + 14} ${y0 + MARGIN.top + plotH / 2})">ms (log)</text>`,
  );

  const steps = Math.min(400, n);
  const points: string[] = [];
  for (let i = 0; i <= steps; i++) {
    const x = (i / steps) * xMax;
    const q = Math.min(1, 1 - 10 ** -x);
    const value = percentile(sorted, Math.max(q * 100, 100 / n));
    points.push(`${px(x).toFixed(1)},${py(value).toFixed(1)}`);
  }
  parts.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${points.join(" ")}"/>`);

  if (series.targetMs !== undefined) {
    const y = py(series.targetMs).toFixed(1);
    parts.push(`<line x1="${px(0)}" x2="${px(xMax)}" y1="${y}" y2="${y}" stroke="#d62728" stroke-dasharray="6 4"/>`);
    // On the left, where the curve's labels (p99 near the right edge) do not go.
    parts.push(`<text x="${px(0) + 4}" y="${Number(y) - 4}" font-size="10" fill="#d62728">target ${fmtMs(series.targetMs)} ms</text>`);
  }
  for (const p of [50, 99]) {
    const value = percentile(sorted, p);
    const x = px(Math.min(xMax, -Math.log10(1 - p / 100)));
    const y = py(value);
    parts.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3.5" fill="${color}"/>`);
    // Near the right edge the label goes to the left of its point.
    const nearEdge = x > px(xMax) - 90;
    const labelX = nearEdge ? x - 6 : x + 6;
    parts.push(
      `<text x="${labelX.toFixed(1)}" y="${(y - 6).toFixed(1)}" font-size="10" text-anchor="${nearEdge ? "end" : "start"}">p${p} ${fmtMs(value)} ms</text>`,
    );
  }
  return parts.join("\n");
}

export function renderLatencySvg(series: LatencySeries[], caption: string): string {
  const rows = Math.max(1, Math.ceil(series.length / COLUMNS));
  const width = PANEL_W * COLUMNS;
  const height = PANEL_H * rows + 40;
  const panels = series.map((s, i) => panel(s, COLORS[i % COLORS.length], (i % COLUMNS) * PANEL_W, 30 + Math.floor(i / COLUMNS) * PANEL_H));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="12" y="20" font-size="14" font-weight="bold">${escapeXml(caption)}</text>`,
    ...panels,
    `</svg>`,
    "",
  ].join("\n");
}
