/**
 * Which IP addresses a live webhook may never reach: private, loopback, link-local, carrier-grade NAT,
 * unspecified, multicast, reserved and documentation ranges (RFC 6890 special-purpose registries), in IPv4
 * and IPv6, including IPv4 addresses embedded in IPv6 (mapped, NAT64). Pure: no DNS here.
 */
import { BlockList, isIP } from "node:net";

const BLOCKED_V4: Array<[string, number]> = [
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
  ["240.0.0.0", 4],
];

const BLOCKED_V6: Array<[string, number]> = [
  ["::", 128],
  ["::1", 128],
  ["100::", 64],
  ["2001:db8::", 32],
  ["fc00::", 7],
  ["fe80::", 10],
  ["fec0::", 10],
  ["ff00::", 8],
];

const blockList = new BlockList();
for (const [net, bits] of BLOCKED_V4) blockList.addSubnet(net, bits, "ipv4");
for (const [net, bits] of BLOCKED_V6) blockList.addSubnet(net, bits, "ipv6");

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address. */
function embeddedV4(v6: string): string | undefined {
  const lower = v6.toLowerCase();
  for (const prefix of ["::ffff:", "64:ff9b::"]) {
    if (!lower.startsWith(prefix)) continue;
    const rest = lower.slice(prefix.length);
    if (isIP(rest) === 4) return rest;
    const m = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(rest);
    if (m?.[1] !== undefined && m[2] !== undefined) {
      const hi = parseInt(m[1], 16);
      const lo = parseInt(m[2], 16);
      return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
    }
  }
  return undefined;
}

/** True when a live webhook must not connect to `address` (anything that is not a valid IP counts too). */
export function isBlockedAddress(address: string): boolean {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const family = isIP(bare);
  if (family === 4) return blockList.check(bare, "ipv4");
  if (family === 6) {
    const v4 = embeddedV4(bare);
    if (v4 !== undefined) return blockList.check(v4, "ipv4");
    return blockList.check(bare, "ipv6");
  }
  return true;
}
