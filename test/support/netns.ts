// A network namespace joined to this host by a veth pair: a process started inside it reaches the
// host only through the pair's two addresses. Taking the host's end down cuts it off the way a
// partition does: packets vanish both ways and nothing fails at once (the namespace's end only
// loses its carrier; on the host a blackhole route keeps them from leaking out another way).
// Needs root and iproute2; `networkNamespaceSupport` says why not.
import { randomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";

export interface NetworkNamespace {
  name: string;
  /** The host's end of the pair: servers the namespace may reach listen here. */
  hostAddress: string;
  /** The namespace's end of the pair. */
  innerAddress: string;
  /** Command prefix that runs a program inside the namespace (execs in place: the pid is the program's). */
  execPrefix: string[];
  /** Take the host's end of the link down: the namespace's packets go nowhere, the host's to it are dropped. */
  cut(): void;
  restore(): void;
  /** Delete the namespace and with it both ends of the pair. Safe to call twice. */
  remove(): void;
}

function ip(args: string[]): { ok: boolean; output: string } {
  const result = spawnSync("ip", args, { encoding: "utf8" });
  if (result.error) return { ok: false, output: result.error.message };
  return { ok: result.status === 0, output: `${result.stdout}${result.stderr}`.trim() };
}

function mustIp(args: string[]): void {
  const result = ip(args);
  if (!result.ok) throw new Error(`ip ${args.join(" ")} failed: ${result.output}`);
}

/** Null when namespaces can be made here; else the reason (not root, no `ip`, no permission). */
export function networkNamespaceSupport(): string | null {
  if (process.platform !== "linux") return `network namespaces are Linux only (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return "network namespaces need root (the test adds a namespace and a veth pair)";
  const probe = `sbprobe${randomBytes(4).toString("hex")}`;
  const added = ip(["netns", "add", probe]);
  if (!added.ok) return `\`ip netns add\` does not work here: ${added.output || "iproute2 missing?"}`;
  ip(["netns", "del", probe]);
  return null;
}

/** A /30 in 10.0.0.0/8 that no interface of this host uses yet. */
function freeSubnet(): [string, string] {
  const used = ip(["-o", "-4", "addr"]).output;
  for (let attempt = 0; attempt < 50; attempt++) {
    const [b, c] = randomBytes(2);
    const base = `10.${200 + (b % 50)}.${c}`;
    if (!used.includes(` ${base}.`)) return [`${base}.1`, `${base}.2`];
  }
  throw new Error("no free 10.x.y.0/30 found for the veth pair");
}

/** Make a namespace with a unique name (and unique veth names: at most 15 characters). */
export function createNetworkNamespace(label: string): NetworkNamespace {
  const id = randomBytes(3).toString("hex");
  const name = `${label}-${id}`;
  const hostLink = `sbh${id}`;
  const innerLink = `sbn${id}`;
  const [hostAddress, innerAddress] = freeSubnet();
  const subnet = `${hostAddress.slice(0, hostAddress.lastIndexOf("."))}.0/30`;
  // While the host's end is down its connected route is gone: this one (less preferred) drops
  // the packets instead of sending them to the default gateway.
  const blackhole = ["route", "add", "blackhole", subnet, "metric", "4000"];
  let removed = false;
  const remove = (): void => {
    if (removed) return;
    removed = true;
    // Deleting the namespace deletes its end of the pair, and with it the host's end.
    ip(["netns", "del", name]);
    if (ip(["link", "show", hostLink]).ok) ip(["link", "del", hostLink]);
    ip(["route", "del", "blackhole", subnet, "metric", "4000"]);
  };
  try {
    mustIp(["netns", "add", name]);
    mustIp(["link", "add", hostLink, "type", "veth", "peer", "name", innerLink]);
    mustIp(["link", "set", innerLink, "netns", name]);
    mustIp(["addr", "add", `${hostAddress}/30`, "dev", hostLink]);
    mustIp(["link", "set", hostLink, "up"]);
    mustIp(["-n", name, "addr", "add", `${innerAddress}/30`, "dev", innerLink]);
    mustIp(["-n", name, "link", "set", innerLink, "up"]);
    mustIp(["-n", name, "link", "set", "lo", "up"]);
    mustIp(blackhole);
  } catch (err) {
    remove();
    throw err;
  }
  return {
    name,
    hostAddress,
    innerAddress,
    execPrefix: ["ip", "netns", "exec", name],
    cut: () => mustIp(["link", "set", hostLink, "down"]),
    restore: () => mustIp(["link", "set", hostLink, "up"]),
    remove,
  };
}
