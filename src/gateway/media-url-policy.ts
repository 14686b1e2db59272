// Which image URLs the gateway fetches for an API client: public https URLs only. A host that is
// (or resolves to) a loopback, private, link-local or otherwise internal address is refused, so
// a client cannot make the gateway read its own network. `allowHttpLoopback` (tests against
// local servers) admits http and https on loopback addresses, and nothing else more. A host name
// is resolved once: the download connects to the addresses checked here.
import { lookup } from "node:dns/promises";
import { BlockList, isIP } from "node:net";
import type { CheckedUrl } from "./media-download.js";
import { MediaError } from "./media.js";

const INTERNAL = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8], ["10.0.0.0", 8], ["100.64.0.0", 10], ["127.0.0.0", 8], ["169.254.0.0", 16], ["172.16.0.0", 12],
  ["192.0.0.0", 24], ["192.168.0.0", 16], ["198.18.0.0", 15], ["224.0.0.0", 4], ["240.0.0.0", 4],
] as const) {
  INTERNAL.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [["::", 128], ["::1", 128], ["fc00::", 7], ["fe80::", 10], ["ff00::", 8]] as const) {
  INTERNAL.addSubnet(network, prefix, "ipv6");
}
// IPv6 forms that carry an IPv4 address a gateway or relay may forward to (it could be internal):
// refused whatever they embed. IPv4-mapped addresses (::ffff:0:0/96) are checked by the IPv4 rules.
for (const [network, prefix] of [
  ["::", 96], // IPv4-compatible
  ["::ffff:0:0:0", 96], // SIIT, IPv4-translated
  ["64:ff9b::", 96], // NAT64, well-known prefix
  ["64:ff9b:1::", 48], // NAT64, local use
  ["2001::", 32], // Teredo
  ["2002::", 16], // 6to4
] as const) {
  INTERNAL.addSubnet(network, prefix, "ipv6");
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");

export type Resolver = (host: string) => Promise<string[]>;

const resolveAll: Resolver = async (host) => (await lookup(host, { all: true })).map((entry) => entry.address);

function family(address: string): "ipv4" | "ipv6" {
  return isIP(address) === 6 ? "ipv6" : "ipv4";
}

/** The check `downloadMedia` runs on every hop of an API client's image URL. */
export function publicImageUrlCheck(options: { allowHttpLoopback: boolean; resolve?: Resolver }): (url: URL) => Promise<CheckedUrl> {
  const resolve = options.resolve ?? resolveAll;
  return async (url) => {
    const host = url.hostname.replace(/^\[|\]$/g, "");
    let addresses: string[];
    if (isIP(host)) {
      addresses = [host];
    } else {
      try {
        addresses = await resolve(host);
      } catch {
        throw new MediaError("fetch_failed", `the image host ${host} could not be resolved`);
      }
      if (addresses.length === 0) throw new MediaError("fetch_failed", `the image host ${host} could not be resolved`);
    }
    // An address literal needs no lookup: nothing to pin.
    const checked = { addresses: isIP(host) ? [] : addresses };
    const loopback = addresses.length > 0 && addresses.every((a) => LOOPBACK.check(a, family(a)));
    if (options.allowHttpLoopback && loopback && (url.protocol === "http:" || url.protocol === "https:")) return checked;
    if (url.protocol !== "https:") throw new MediaError("blocked_url", "image URLs must use https (or be data: URLs)");
    if (addresses.some((a) => INTERNAL.check(a, family(a)))) {
      throw new MediaError("blocked_url", `the image host ${host} is not a public address`);
    }
    return checked;
  };
}
