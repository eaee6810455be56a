/**
 * Which IP addresses a live webhook may reach: global unicast only, an allow-list rather than a list of known
 * bad ranges, so a special-purpose range nobody thought of is refused by default. IPv4: anything but private,
 * loopback, link-local, carrier-grade NAT, this-network, multicast, reserved, broadcast, benchmarking and
 * documentation space. IPv6: 2000::/3 (global unicast) minus the ranges inside it that carry or reach another
 * network (6to4, Teredo and the other IETF protocol assignments, documentation). An IPv6 address that names an
 * IPv4 one (IPv4-mapped, well-known NAT64 prefix) is judged by that IPv4 address; other forms that embed IPv4
 * (IPv4-compatible, NAT64 local use, 6to4, Teredo) are refused. Ranges are matched by node:net's BlockList.
 * Pure: no DNS here.
 */
import { BlockList, isIP } from "node:net";

const REFUSED_V4: Array<[string, number]> = [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.0.2.0", 24],
  ["192.88.99.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["198.51.100.0", 24],
  ["203.0.113.0", 24],
  ["224.0.0.0", 4],
  // Reserved, and 255.255.255.255 (limited broadcast) with it.
  ["240.0.0.0", 4],
];

/** Global unicast: the only IPv6 space a webhook receiver can be in. */
const GLOBAL_UNICAST_V6: [string, number] = ["2000::", 3];

/** Inside 2000::/3 but not a host on the public internet, or a tunnel into another network. */
const REFUSED_IN_GLOBAL_V6: Array<[string, number]> = [
  // IETF protocol assignments: Teredo (2001::/32, a tunnel to an IPv4 host), benchmarking (2001:2::/48), ORCHID.
  ["2001::", 23],
  ["2001:db8::", 32],
  // 6to4: the relay would reach the IPv4 address embedded in bits 16–47, whatever it is.
  ["2002::", 16],
  ["3fff::", 20],
  // Segment routing (SRv6) identifiers.
  ["5f00::", 16],
];

/** IPv6 prefixes whose last 32 bits name the IPv4 host actually reached; judged by that address. */
const EMBEDS_V4_V6: Array<[string, number]> = [
  ["::ffff:0:0", 96],
  ["64:ff9b::", 96],
];

function blockList(ranges: ReadonlyArray<[string, number]>, family: "ipv4" | "ipv6"): BlockList {
  const list = new BlockList();
  for (const [net, bits] of ranges) list.addSubnet(net, bits, family);
  return list;
}

const refusedV4 = blockList(REFUSED_V4, "ipv4");
const globalV6 = blockList([GLOBAL_UNICAST_V6], "ipv6");
const refusedInGlobalV6 = blockList(REFUSED_IN_GLOBAL_V6, "ipv6");
const embedsV4 = blockList(EMBEDS_V4_V6, "ipv6");

/**
 * The last 32 bits of an IPv6 address as dotted IPv4. The address goes through the URL parser first: it
 * refuses zone indexes and prints the canonical form (hex groups only, `::` for the longest zero run), whose
 * last two groups are all this reads.
 */
function lastV4(v6: string): string | undefined {
  let canonical: string;
  try {
    canonical = new URL(`http://[${v6}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  const [head = "", tail] = canonical.split("::");
  const groups = tail === undefined ? head.split(":") : ["0", "0", ...head.split(":"), ...tail.split(":")];
  const [hi = 0, lo = 0] = groups.slice(-2).map((g) => (g === "" ? 0 : parseInt(g, 16)));
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

function isAllowedV6(v6: string): boolean {
  // A zone index (fe80::1%eth0) names an interface, never a public host; BlockList would not say so.
  if (v6.includes("%")) return false;
  if (embedsV4.check(v6, "ipv6")) {
    const v4 = lastV4(v6);
    return v4 !== undefined && !refusedV4.check(v4, "ipv4");
  }
  return globalV6.check(v6, "ipv6") && !refusedInGlobalV6.check(v6, "ipv6");
}

/** True when a live webhook must not connect to `address` (anything that is not a valid IP counts too). */
export function isBlockedAddress(address: string): boolean {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return refusedV4.check(bare, "ipv4");
  if (family === 6) return !isAllowedV6(bare);
  return true;
}
