// Prints a benchmark's figures as a fixed-width table with a pass/fail column, and renders the
// same rows as Markdown for the README.
import { passes, type BenchResult, type Figure } from "./result.js";

function formatValue(figure: Figure): string {
  const v = figure.value;
  if (!Number.isFinite(v)) return "n/a";
  if (Number.isInteger(v) && figure.unit === "") return String(v);
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : 2;
  return `${v.toFixed(digits)} ${figure.unit}`.trim();
}

function formatTarget(figure: Figure): string {
  return figure.target ? `${figure.target.op} ${figure.target.value} ${figure.unit}`.trim() : "";
}

function verdict(figure: Figure): string {
  const ok = passes(figure);
  return ok === null ? "" : ok ? "pass" : "FAIL";
}

export function renderTable(result: BenchResult): string {
  const header = ["figure", "value", "target", "result"];
  const rows = result.figures.map((f) => [f.label, formatValue(f), formatTarget(f), verdict(f)]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
  const out = [`\n== ${result.title} ==`, line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)];
  for (const note of result.notes) out.push(`  * ${note}`);
  return out.join("\n");
}

export function renderMarkdown(results: BenchResult[]): string {
  const out = ["| benchmark | figure | value | target | result |", "|---|---|---|---|---|"];
  for (const result of results) {
    for (const f of result.figures) out.push(`| ${result.name} | ${f.label} | ${formatValue(f)} | ${formatTarget(f)} | ${verdict(f)} |`);
  }
  for (const result of results) if (result.markdown) out.push("", result.markdown);
  return out.join("\n");
}
