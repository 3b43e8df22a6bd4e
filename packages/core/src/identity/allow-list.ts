// The allow list: client IPs and CIDR ranges a limited route never refuses, parsed once with the same IP parser identity uses.
import type ipaddr from 'ipaddr.js';
import { invalidOption } from '../base/errors';
import { parseAddress } from './ip';

/** True when the framework-reported client IP is on the list. */
export type AllowList = (ip: unknown) => boolean;

/**
 * Parses `entries` ('10.0.0.0/8', '203.0.113.7', '2001:db8::/32', '::ffff:10.1.2.3') at
 * construction; FG_INVALID_OPTION names a bad entry. An IPv4-mapped IPv6 entry or request address
 * counts as IPv4, as identity keys it. Undefined when the list is empty or not given.
 */
export function createAllowList(entries: unknown, option = 'allowList'): AllowList | undefined {
  if (entries === undefined) return undefined;
  if (!Array.isArray(entries) || entries.length > 10_000) invalidOption(option, entries, 'an array of up to 10000 IP addresses or CIDR ranges');
  if (entries.length === 0) return undefined;
  const v4: [ipaddr.IPv4, number][] = [];
  const v6: [ipaddr.IPv6, number][] = [];
  entries.forEach((entry: unknown, i) => {
    const bad = () => invalidOption(`${option}[${i}]`, entry, "an IP address or CIDR range, e.g. '10.0.0.0/8' or '2001:db8::/32'");
    if (typeof entry !== 'string') bad();
    const [text, bits, extra] = (entry as string).trim().split('/');
    if (extra !== undefined) bad();
    const addr = parseAddress(text);
    if (!addr) bad();
    const max = addr!.kind() === 'ipv4' ? 32 : 128;
    // A mapped IPv6 entry ('::ffff:10.0.0.0/104') was read as IPv4: its prefix counts from bit 96.
    const mapped = max === 32 && /:/.test(text);
    const raw = bits === undefined ? (mapped ? 128 : max) : Number(bits);
    const prefix = mapped ? raw - 96 : raw;
    if (!/^\d{1,3}$/.test(bits ?? '0') || !Number.isInteger(prefix) || prefix < 0 || prefix > max) bad();
    if (addr!.kind() === 'ipv4') v4.push([addr as ipaddr.IPv4, prefix]);
    else v6.push([addr as ipaddr.IPv6, prefix]);
  });
  return (ip) => {
    const addr = parseAddress(ip);
    if (!addr) return false;
    if (addr.kind() === 'ipv4') return v4.some(([range, bits]) => (addr as ipaddr.IPv4).match(range, bits));
    return v6.some(([range, bits]) => (addr as ipaddr.IPv6).match(range, bits));
  };
}
