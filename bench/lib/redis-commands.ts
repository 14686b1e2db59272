// Commands a Redis server executed over a window, by command, from `INFO commandstats` (no
// MONITOR: counting costs the server nothing). Redis counts what scripts call too: an EVALSHA that
// runs five commands counts six. The counts are the whole server's, so a window measures one
// system only when nothing else uses that Redis meanwhile.
import { Redis } from "ioredis";
import { redisOptionsFromUrl } from "../../src/bus/redis-url.js";

export type CommandCounts = Record<string, number>;

export function parseCommandStats(info: string): CommandCounts {
  const counts: CommandCounts = {};
  for (const match of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) counts[match[1]] = Number(match[2]);
  return counts;
}

export function diffCounts(before: CommandCounts, after: CommandCounts): CommandCounts {
  const delta: CommandCounts = {};
  for (const [name, calls] of Object.entries(after)) {
    const n = calls - (before[name] ?? 0);
    if (n > 0) delta[name] = n;
  }
  return delta;
}

export function addCounts(into: CommandCounts, more: CommandCounts): CommandCounts {
  for (const [name, n] of Object.entries(more)) into[name] = (into[name] ?? 0) + n;
  return into;
}

export function totalCount(counts: CommandCounts): number {
  return Object.values(counts).reduce((sum, n) => sum + n, 0);
}

/** `name n.n, ...` per message, largest first, down to `min` per message. */
export function describePerMessage(counts: CommandCounts, messages: number, min = 0.05): string {
  return Object.entries(counts)
    .map(([name, n]) => [name, n / messages] as const)
    .filter(([, per]) => per >= min)
    .sort((a, b) => b[1] - a[1])
    .map(([name, per]) => `${name} ${per.toFixed(per >= 10 ? 0 : per >= 1 ? 1 : 2)}`)
    .join(", ");
}

/** Reads a server's command counters; the reader's own INFO calls are left out of every window. */
export class CommandStatsReader {
  private constructor(private readonly client: Redis) {}

  static async connect(url: string): Promise<CommandStatsReader> {
    const client = new Redis({ ...redisOptionsFromUrl(url), lazyConnect: true, maxRetriesPerRequest: 2 });
    await client.connect();
    return new CommandStatsReader(client);
  }

  async snapshot(): Promise<CommandCounts> {
    return parseCommandStats(await this.client.info("commandstats"));
  }

  /** The commands executed between two snapshots taken by this reader. */
  window(before: CommandCounts, after: CommandCounts): CommandCounts {
    const delta = diffCounts(before, after);
    // The INFO that took `before` is counted in `after` (a command's own output never includes it).
    if (delta.info !== undefined) {
      delta.info -= 1;
      if (delta.info <= 0) delete delta.info;
    }
    return delta;
  }

  close(): void {
    this.client.disconnect();
  }
}
