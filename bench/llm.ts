// LLM-bound load: turns that wait on a model for seconds, against a fake streaming
// OpenAI-compatible server (children/fake-llm.ts) in its own process. Three parts:
//   1. scale-out: the same conversations with turns run by serve alone, serve + 1 or 2 workers,
//      or two serve nodes (lib/llm-scale.ts);
//   2. turns in flight: ~1,000 streamed turns at once in one serve process, half API requests
//      watched over WebSocket, half Slack mentions (lib/llm-inflight.ts);
//   3. the Chat SDK peer on the same model and the same Slack load (lib/llm-peer.ts).
import { DEFAULT_PACE, type ModelPace } from "./lib/fake-llm-reply.js";
import { startFakeLlm } from "./lib/fake-llm.js";
import { measureInflight, type InflightRun } from "./lib/llm-inflight.js";
import { measurePeerRounds, type PeerRound, type PeerShape } from "./lib/llm-peer.js";
import { LAYOUTS, measureLayout, type LayoutName, type LayoutRun, type ScaleShape } from "./lib/llm-scale.js";
import type { BenchContext, BenchResult, Figure, LatencySeries } from "./lib/result.js";
import { SYSTEM_LABELS, type SystemName } from "./lib/slack-systems.js";
import { round, summarize } from "./lib/stats.js";

const LAYOUT_ORDER: readonly LayoutName[] = ["serve", "1_worker", "2_workers", "2_nodes"];

interface Shapes {
  scalePace: ModelPace;
  scale: ScaleShape;
  inflightPace: ModelPace;
  inflightTurns: number;
  peerPace: ModelPace;
  peer: PeerShape;
}

function shapesFor(ctx: BenchContext): Shapes {
  return ctx.quick
    ? {
        scalePace: { ...DEFAULT_PACE, turnMs: 1_000 },
        scale: { conversations: 32, messages: 2, concurrency: 8 },
        inflightPace: { ...DEFAULT_PACE, turnMs: 2_000 },
        inflightTurns: 400,
        peerPace: DEFAULT_PACE,
        peer: { threads: 200, mentions: 2, warmUpThreads: 30, rounds: 1, concurrency: 1024 },
      }
    : {
        scalePace: DEFAULT_PACE,
        scale: { conversations: 64, messages: 2, concurrency: 8 },
        inflightPace: { ...DEFAULT_PACE, turnMs: 4_000 },
        inflightTurns: 1_000,
        peerPace: DEFAULT_PACE,
        peer: { threads: 500, mentions: 2, warmUpThreads: 50, rounds: 2, concurrency: 1024 },
      };
}

const turnsPerS = (r: LayoutRun): number => r.run.turns / r.run.seconds;
const minShare = (r: LayoutRun): number => Math.min(...Object.values(r.shares));
const pct = (share: number): string => `${Math.round(share * 100)}%`;

type Part = { figures: Figure[]; notes: string[]; series: LatencySeries[]; markdown?: string };

async function scaleOut(ctx: BenchContext, shapes: Shapes): Promise<Part> {
  const fake = await startFakeLlm(shapes.scalePace);
  const runs = new Map<LayoutName, LayoutRun>();
  try {
    for (const layout of LAYOUT_ORDER) runs.set(layout, await measureLayout(ctx, fake, layout, shapes.scale));
  } finally {
    await fake.stop();
  }
  const get = (layout: LayoutName): LayoutRun => runs.get(layout) as LayoutRun;
  const base = turnsPerS(get("serve"));
  const multi = LAYOUT_ORDER.filter((l) => l !== "serve").map(get);
  const failed = [...runs.values()].reduce((n, r) => n + r.run.failed, 0);
  const figures: Figure[] = [
    { key: "llm_turns_per_s_serve", label: "scale-out: turns/s, serve alone", value: round(base, 2), unit: "turns/s" },
    { key: "llm_scale_1_worker", label: "scale-out: serve + 1 worker / serve alone", value: round(turnsPerS(get("1_worker")) / base, 2), unit: "", target: { op: ">=", value: 1.8 } },
    { key: "llm_scale_2_workers", label: "scale-out: serve + 2 workers / serve alone", value: round(turnsPerS(get("2_workers")) / base, 2), unit: "", target: { op: ">=", value: 2.5 } },
    { key: "llm_scale_2_nodes", label: "scale-out: two serve nodes (load on node 1) / serve alone", value: round(turnsPerS(get("2_nodes")) / base, 2), unit: "", target: { op: ">=", value: 1.8 } },
    { key: "llm_min_process_share", label: "scale-out: smallest process share of the model calls (multi-process layouts)", value: round(Math.min(...multi.map(minShare)), 3), unit: "", target: { op: ">=", value: 0.25 } },
    ...LAYOUT_ORDER.map((l): Figure => ({ key: `llm_reply_p50_ms_${l}`, label: `scale-out: reply p50, ${LAYOUTS[l].label}`, value: round(summarize(get(l).run.replyMs).p50), unit: "ms" })),
    { key: "llm_scale_failures", label: "scale-out: messages without their full reply", value: failed, unit: "", target: { op: "<=", value: 0 } },
  ];
  const rows = LAYOUT_ORDER.map((l) => {
    const r = get(l);
    const shares = Object.entries(r.shares).map(([who, s]) => `${who} ${pct(s)}`).join(", ");
    return `| ${LAYOUTS[l].label} | ${turnsPerS(r).toFixed(2)} | ${(turnsPerS(r) / base).toFixed(2)} | ${summarize(r.run.replyMs).p50.toFixed(0)} | ${r.modelCalls} | ${shares} |`;
  });
  const markdown = [
    "### LLM-bound load: scale-out by layout",
    "",
    "| layout | turns/s | / serve alone | reply p50 (ms) | model calls | share of the model calls |",
    "|---|---|---|---|---|---|",
    ...rows,
  ].join("\n");
  const notes = [
    `scale-out: ${shapes.scale.conversations} conversations x ${shapes.scale.messages} messages, all at once, through node 1's POST /v1/chat/completions (non-streamed, X-Session-Id each), ` +
      `each conversation's next message after its reply; WORKER_CONCURRENCY ${shapes.scale.concurrency} in every process; one SQLite file and one Redis prefix per layout; ` +
      `model turn ${shapes.scalePace.turnMs} ms. turns/s: messages / (first send to last reply), after an uncounted wave of ${shapes.scale.concurrency} messages.`,
    ...LAYOUT_ORDER.map((l) => `${LAYOUTS[l].label}: ${turnsPerS(get(l)).toFixed(2)} turns/s, share of the model calls: ${Object.entries(get(l).shares).map(([who, s]) => `${who} ${pct(s)}`).join(", ")}.`),
  ];
  for (const r of runs.values()) if (r.run.failed) notes.push(`${LAYOUTS[r.layout].label}: ${r.run.failed} message(s) failed, e.g. ${r.run.errors[0] ?? ""}`);
  const series = LAYOUT_ORDER.map((l): LatencySeries => ({ name: `LLM reply, ${LAYOUTS[l].label}`, samplesMs: get(l).run.replyMs }));
  return { figures, notes, series, markdown };
}

async function inflight(ctx: BenchContext, shapes: Shapes): Promise<Part> {
  const fake = await startFakeLlm(shapes.inflightPace);
  let run: InflightRun;
  try {
    run = await measureInflight(ctx, fake, shapes.inflightTurns);
  } finally {
    await fake.stop();
  }
  const all = [...run.wsReplyMs, ...run.slackReplyMs];
  const p50 = summarize(all).p50;
  const turnMs = shapes.inflightPace.turnMs;
  const figures: Figure[] = [
    { key: "llm_inflight_rss_mb", label: `in flight: serve peak RSS, ${run.turns} streamed turns at once`, value: round(run.peakRssMb, 1), unit: "MB", target: { op: "<=", value: 350 } },
    { key: "llm_inflight_reply_p50_ms", label: "in flight: reply p50 (full text shown)", value: round(p50), unit: "ms" },
    { key: "llm_inflight_reply_p99_ms", label: "in flight: reply p99 (full text shown)", value: round(summarize(all).p99), unit: "ms" },
    { key: "llm_inflight_reply_p50_ratio", label: `in flight: reply p50 / the model's turn (${turnMs} ms)`, value: round(p50 / turnMs, 3), unit: "", target: { op: "<=", value: 1.25 } },
    { key: "llm_inflight_cpu_ms_per_turn", label: "in flight: serve CPU per turn (every thread)", value: round(run.cpuMs / run.turns, 2), unit: "ms" },
    { key: "llm_inflight_failures", label: "in flight: turns whose full reply was not shown", value: run.failed, unit: "", target: { op: "<=", value: 0 } },
  ];
  const ws = summarize(run.wsReplyMs);
  const slack = summarize(run.slackReplyMs);
  const notes = [
    `in flight: one \`serve\` process, WORKER_CONCURRENCY ${run.concurrency}, Slack on (fake Web API); ${run.turns} turns started at once: ${run.wsTurns} API requests ` +
      `(POST /v1/chat/completions, a session each, a WebSocket subscriber per session in a client process) and ${run.turns - run.wsTurns} Slack mentions in new threads; ` +
      `model turn ${turnMs} ms (first token at ${Math.round(shapes.inflightPace.firstTokenShare * 100)}%, ${shapes.inflightPace.chunks} chunks), after ${run.warmUpTurns} uncounted turns of each kind. ` +
      "A reply counts when its full text was shown: the WebSocket turn.completed event with it (and the request answered 200), or Slack showing it (a post or an edit). " +
      "CPU: /proc/<pid>/stat of serve from the first send to the last reply; RSS: VmHWM of serve over its whole life.",
    `in flight: WebSocket reply p50 ${ws.p50.toFixed(0)} ms, p99 ${ws.p99.toFixed(0)} ms (first delta p50 ${summarize(run.wsFirstDeltaMs).p50.toFixed(0)} ms, ${run.wsDeltaFrames} delta frames); ` +
      `Slack reply p50 ${slack.p50.toFixed(0)} ms, p99 ${slack.p99.toFixed(0)} ms (first post p50 ${summarize(run.slackFirstPostMs).p50.toFixed(0)} ms); Slack calls ${JSON.stringify(run.slackCalls)}.`,
  ];
  const start = summarize(run.modelStartMs);
  notes.push(
    `in flight, where the time went (from the sends): the model calls arrived at the fake p50 ${start.p50.toFixed(0)} ms, p99 ${start.p99.toFixed(0)} ms; ` +
      `their answers ended p50 ${summarize(run.modelEndMs).p50.toFixed(0)} ms; replies shown p50 ${p50.toFixed(0)} ms. ` +
      `The fake's event-loop delay p99 ${run.fakeLoopDelayP99Ms.toFixed(1)} ms; CPU per turn of the fake ${(run.fakeCpuMs / run.turns).toFixed(2)} ms and of the WebSocket clients ` +
      `${(run.clientsCpuMs / run.wsTurns).toFixed(2)} ms per API turn; the machine's cores ${run.machineBusyPct.toFixed(0)}% busy over the window.`,
  );
  if (run.errors.length) notes.push(`in flight: failures, e.g. ${run.errors.join("; ")}`);
  const series: LatencySeries[] = [
    { name: `LLM in flight, WebSocket reply (${turnMs} ms model turn)`, samplesMs: run.wsReplyMs, targetMs: 1.25 * turnMs },
    { name: `LLM in flight, Slack reply (${turnMs} ms model turn)`, samplesMs: run.slackReplyMs, targetMs: 1.25 * turnMs },
  ];
  return { figures, notes, series };
}

interface PeerSide {
  turnsPerS: number;
  replyMs: number[];
  cpuMsPerTurn: number;
  peakRssMb: number;
  failed: number;
  slackCalls: Record<string, number>;
  turns: number;
}

function side(rounds: PeerRound[]): PeerSide {
  const turns = rounds.reduce((n, r) => n + r.turns, 0);
  const slackCalls: Record<string, number> = {};
  for (const r of rounds) for (const [m, n] of Object.entries(r.slackCalls)) slackCalls[m] = (slackCalls[m] ?? 0) + n;
  return {
    turnsPerS: rounds.reduce((n, r) => n + r.turnsPerS, 0) / rounds.length,
    replyMs: rounds.flatMap((r) => r.replies.finalReplyMs),
    cpuMsPerTurn: rounds.reduce((n, r) => n + r.cpuMs, 0) / turns,
    peakRssMb: Math.max(...rounds.map((r) => r.peakRssMb)),
    failed: rounds.reduce((n, r) => n + r.replies.lost + r.replies.refused, 0),
    slackCalls,
    turns,
  };
}

async function peerComparison(ctx: BenchContext, shapes: Shapes): Promise<Part> {
  const fake = await startFakeLlm(shapes.peerPace);
  let rounds: PeerRound[];
  try {
    rounds = await measurePeerRounds(ctx, fake, shapes.peer);
  } finally {
    await fake.stop();
  }
  const of = (name: SystemName): PeerSide => side(rounds.filter((r) => r.system === name));
  const peer = of("peer");
  const sb = of("switchboard");
  const p99 = (xs: number[]): number => summarize(xs).p99;
  const figures: Figure[] = [
    { key: "llm_peer_turns_per_s", label: `Slack: ${SYSTEM_LABELS.peer} turns/s, closed loop`, value: round(peer.turnsPerS, 1), unit: "turns/s" },
    { key: "llm_slack_turns_per_s", label: `Slack: ${SYSTEM_LABELS.switchboard} turns/s, closed loop`, value: round(sb.turnsPerS, 1), unit: "turns/s" },
    { key: "llm_peer_ratio", label: "Slack: turns/s, Switchboard / Chat SDK", value: round(sb.turnsPerS / peer.turnsPerS, 3), unit: "", target: { op: ">=", value: 1.5 } },
    { key: "llm_peer_reply_p99_ms", label: `Slack: ${SYSTEM_LABELS.peer} reply p99 (full text shown)`, value: round(p99(peer.replyMs)), unit: "ms" },
    { key: "llm_slack_reply_p99_ms", label: `Slack: ${SYSTEM_LABELS.switchboard} reply p99 (full text shown)`, value: round(p99(sb.replyMs)), unit: "ms" },
    { key: "llm_reply_p99_ratio", label: "Slack: reply p99, Switchboard / Chat SDK", value: round(p99(sb.replyMs) / p99(peer.replyMs), 3), unit: "", target: { op: "<=", value: 0.8 } },
    { key: "llm_peer_cpu_ms_per_turn", label: `Slack: ${SYSTEM_LABELS.peer} process CPU per turn`, value: round(peer.cpuMsPerTurn, 2), unit: "ms" },
    { key: "llm_slack_cpu_ms_per_turn", label: `Slack: ${SYSTEM_LABELS.switchboard} process CPU per turn`, value: round(sb.cpuMsPerTurn, 2), unit: "ms" },
    { key: "llm_cpu_per_turn_ratio", label: "Slack: CPU per turn, Switchboard / Chat SDK", value: round(sb.cpuMsPerTurn / peer.cpuMsPerTurn, 3), unit: "", target: { op: "<=", value: 0.7 } },
    { key: "llm_peer_rss_mb", label: `Slack: ${SYSTEM_LABELS.peer} peak RSS`, value: round(peer.peakRssMb, 1), unit: "MB" },
    { key: "llm_slack_rss_mb", label: `Slack: ${SYSTEM_LABELS.switchboard} peak RSS`, value: round(sb.peakRssMb, 1), unit: "MB" },
    { key: "llm_rss_ratio", label: "Slack: peak RSS, Switchboard / Chat SDK", value: round(sb.peakRssMb / peer.peakRssMb, 3), unit: "", target: { op: "<=", value: 1 } },
    { key: "llm_peer_failures", label: `Slack: ${SYSTEM_LABELS.peer} mentions without their full reply`, value: peer.failed, unit: "" },
    { key: "llm_slack_failures", label: `Slack: ${SYSTEM_LABELS.switchboard} mentions without their full reply`, value: sb.failed, unit: "", target: { op: "<=", value: 0 } },
  ];
  const perRound = (name: SystemName): string => rounds.filter((r) => r.system === name).map((r) => r.turnsPerS.toFixed(1)).join(" / ");
  const calls = (s: PeerSide): string => Object.entries(s.slackCalls).map(([m, n]) => `${m} ${(n / s.turns).toFixed(2)}`).join(", ");
  const notes = [
    `Slack: ${shapes.peer.threads} threads x ${shapes.peer.mentions} mentions, closed loop (the next mention once the previous reply's full text is shown), ` +
      `${shapes.peer.rounds === 1 ? "one round each (peer, Switchboard)" : `${shapes.peer.rounds} rounds each, peer Switchboard Switchboard peer`}, each on a fresh process after ${shapes.peer.warmUpThreads} uncounted mentions; ` +
      `model turn ${shapes.peerPace.turnMs} ms (first token at ${Math.round(shapes.peerPace.firstTokenShare * 100)}%, ${shapes.peerPace.chunks} chunks), the same fake model for both. ` +
      `${SYSTEM_LABELS.switchboard}: \`serve\` with WORKER_CONCURRENCY ${shapes.peer.concurrency} (every thread's turn at once, as the peer runs every handler at once), streamed as a post and chat.update edits. ` +
      `${SYSTEM_LABELS.peer}: its handler streams the model with the openai client and posts the stream with thread.post(stream) (Slack's chat.startStream / appendStream / stopStream).`,
    `Slack: turns/s per round: ${SYSTEM_LABELS.peer} ${perRound("peer")}, ${SYSTEM_LABELS.switchboard} ${perRound("switchboard")} (the figure is their mean: mentions / first send to last reply shown). ` +
      "Reply: mention sent until Slack shows its full text; CPU per turn: /proc/<pid>/stat of the server over the closed loop's window; RSS: VmHWM of the server per round, the larger.",
    `Slack: API calls per turn: ${SYSTEM_LABELS.peer} ${calls(peer)}; ${SYSTEM_LABELS.switchboard} ${calls(sb)}.`,
  ];
  const series: LatencySeries[] = [
    { name: `LLM Slack reply, ${SYSTEM_LABELS.peer}`, samplesMs: peer.replyMs },
    { name: `LLM Slack reply, ${SYSTEM_LABELS.switchboard}`, samplesMs: sb.replyMs, targetMs: 0.8 * p99(peer.replyMs) },
  ];
  return { figures, notes, series };
}

export async function llmBenchmark(ctx: BenchContext): Promise<BenchResult> {
  const shapes = shapesFor(ctx);
  const notes: string[] = [];
  const parts: Part[] = [];
  const steps: Array<[string, (ctx: BenchContext, shapes: Shapes) => Promise<Part>]> = [
    ["scale", scaleOut],
    ["inflight", inflight],
    ["peer", peerComparison],
  ];
  // A part that fails says so with a failing figure; the others' figures stand.
  for (const [name, step] of steps) {
    try {
      parts.push(await step(ctx, shapes));
    } catch (err) {
      parts.push({
        figures: [{ key: `llm_${name}_completed`, label: `${name}: completed`, value: Number.NaN, unit: "", target: { op: ">=", value: 1 } }],
        notes: [`${name}: did not complete: ${(err as Error).stack ?? String(err)}`],
        series: [],
      });
    }
  }
  return {
    name: "llm",
    title: "LLM-bound load: fake streaming model, scale-out, turns in flight, the Chat SDK peer",
    figures: parts.flatMap((p) => p.figures),
    notes: [...notes, ...parts.flatMap((p) => p.notes)],
    series: parts.flatMap((p) => p.series),
    markdown: parts.flatMap((p) => (p.markdown ? [p.markdown] : [])).join("\n\n"),
  };
}
