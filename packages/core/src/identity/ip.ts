// Client IP -> bucket subject: IPv4-mapped IPv6 counts as IPv4, IPv6 is keyed on its prefix, one key per address.
import { isIP } from './is-ip';
import ipaddr from 'ipaddr.js';

/**
 * Longest string worth parsing. The longest textual IPv6 address (with an embedded IPv4 part) is
 * 45 characters; brackets and a port add 8. Anything longer is malformed, and capping it first
 * keeps hostile megabyte values away from the parser's regexes.
 */
const MAX_IP_LENGTH = 64;

/** The shapes of IPv4 that node:net rejects but inet_aton (and ipaddr.js) read: 1 to 4 decimal, octal or hex parts. */
const LEGACY_V4 = /^(?:0x[0-9a-f]+|\d+)(?:\.(?:0x[0-9a-f]+|\d+)){0,3}$/i;

/** Why an IP could not be used; each is reported once through the logger. */
export type IpProblem = 'missing' | 'malformed';

export type IpSubject = { readonly ok: true; readonly subject: string } | { readonly ok: false; readonly problem: IpProblem };

/**
 * Strips what frameworks or proxies may wrap around an address but is not part of it: surrounding
 * whitespace, `[v6]` or `[v6]:port` brackets, an IPv4 `:port`, and an IPv6 zone id (`%eth0`: it
 * names a local interface, not a host). Returns the bare text for ipaddr.js.
 */
function bare(text: string): string {
  let s = text.trim();
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    // '[v6]' or '[v6]:port'; anything after the bracket other than a port makes it malformed.
    if (close === -1 || !/^(?::\d{1,5})?$/.test(s.slice(close + 1))) return '';
    s = s.slice(1, close);
  } else if (/^[0-9.]+:\d{1,5}$/.test(s)) {
    s = s.slice(0, s.indexOf(':'));
  }
  const zone = s.indexOf('%');
  return zone === -1 ? s : s.slice(0, zone);
}

/**
 * The subject for a client IP, or why there is none. `ipv6Subnet` is the prefix length IPv6
 * addresses are keyed on (64: one subscriber's usual allocation, so rotating through the 2^64
 * addresses of one /64 gains nothing). IPv4 is keyed on the whole address. Every textual form of
 * one address (compressed or expanded, any case, with a zone id, IPv4-mapped) gives one subject.
 */
export function ipSubject(ip: unknown, ipv6Subnet: number): IpSubject {
  if (typeof ip !== 'string' || ip.trim() === '') return { ok: false, problem: 'missing' };
  const text = ip.length > MAX_IP_LENGTH ? '' : bare(ip);
  // node:net's validator (is-ip.ts) is a cheap gate: canonical dotted IPv4 (what sockets report) needs no
  // parse at all, and nothing that fails both it and the legacy-IPv4 shape reaches ipaddr.js,
  // whose failures throw (costly, and every request of a hostile caller would pay it).
  const family = isIP(text);
  if (family === 4) return { ok: true, subject: `ip:${text}` };
  const addr = parseBare(text, family);
  if (!addr) return { ok: false, problem: 'malformed' };
  if (addr.kind() === 'ipv6') return { ok: true, subject: `ip6:${maskV6((addr as ipaddr.IPv6).parts, ipv6Subnet)}/${ipv6Subnet}` };
  return { ok: true, subject: `ip:${addr.toString()}` };
}

/** ipaddr.js's parse of bare text whose node:net family is known, IPv4-mapped IPv6 as IPv4; undefined when malformed. */
function parseBare(text: string, family: number): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  // node:net's validator is a cheap gate (above): nothing that fails both it and the legacy-IPv4
  // shape reaches ipaddr.js, whose failures throw.
  if (family === 0 && !LEGACY_V4.test(text)) return undefined;
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    // ipaddr.js also accepts the legacy IPv4 forms inet_aton does ('0x7f.1', '010.0.0.1' octal):
    // they name an address, so they share that address's bucket instead of minting new ones.
    addr = family === 6 ? ipaddr.IPv6.parse(text) : ipaddr.IPv4.parse(text);
  } catch {
    return undefined;
  }
  if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) return (addr as ipaddr.IPv6).toIPv4Address();
  return addr;
}

/**
 * The address a framework reported, parsed as `ipSubject` reads it (brackets, port and zone id
 * stripped; IPv4-mapped IPv6 as IPv4); undefined when missing or malformed.
 */
export function parseAddress(ip: unknown): ipaddr.IPv4 | ipaddr.IPv6 | undefined {
  if (typeof ip !== 'string' || ip.length > MAX_IP_LENGTH) return undefined;
  const text = bare(ip);
  return text === '' ? undefined : parseBare(text, isIP(text));
}

/** The first `bits` bits of an IPv6 address (8 x 16-bit parts), in RFC 5952 form. */
function maskV6(parts: readonly number[], bits: number): string {
  const masked = parts.map((part, i) => {
    const keep = Math.max(0, Math.min(16, bits - i * 16));
    return keep === 0 ? 0 : part & ((0xffff << (16 - keep)) & 0xffff);
  });
  return new ipaddr.IPv6(masked).toString();
}
