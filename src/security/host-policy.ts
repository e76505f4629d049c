import { BlockList, isIP } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { MAX_HOST_LENGTH } from './header-values';

/** Loopback, private and unspecified ranges (Go's netip IsLoopback / IsPrivate / IsUnspecified). */
const LOCAL_RANGES = new BlockList();
LOCAL_RANGES.addSubnet('127.0.0.0', 8, 'ipv4');
LOCAL_RANGES.addSubnet('10.0.0.0', 8, 'ipv4');
LOCAL_RANGES.addSubnet('172.16.0.0', 12, 'ipv4');
LOCAL_RANGES.addSubnet('192.168.0.0', 16, 'ipv4');
LOCAL_RANGES.addAddress('0.0.0.0', 'ipv4');
LOCAL_RANGES.addAddress('::1', 'ipv6');
LOCAL_RANGES.addAddress('::', 'ipv6');
LOCAL_RANGES.addSubnet('fc00::', 7, 'ipv6');

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/** `::ffff:1.2.3.4` → `1.2.3.4` (Go's netip unmaps before classifying); anything else unchanged. No regex. */
function unmap(ip: string): string {
  if (ip.length < 14 || ip.slice(0, 7).toLowerCase() !== '::ffff:') return ip;
  const v4 = ip.slice(7);
  return isIP(v4) === 4 ? v4 : ip;
}

/** Whether an IP address (v4, v6 or v4-mapped v6) is loopback. Not an IP → false. */
export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  const start = address.startsWith('[') ? 1 : 0;
  const end = address.endsWith(']') ? address.length - 1 : address.length;
  const ip = unmap(address.slice(start, Math.max(start, end)));
  const family = isIP(ip);
  return family !== 0 && LOOPBACK.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether `text` is made of ASCII digits only (the empty string included). */
function allDigits(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return false;
  }
  return true;
}

/**
 * Host part of a Host header: `[v6]:port` → `v6`, `name:port` → `name`, lower-cased. One pass, no regular
 * expression (the value is the client's).
 */
export function hostOfHeader(header: string): string {
  const value = header.trim().toLowerCase();
  if (value.startsWith('[')) {
    const close = value.indexOf(']');
    const rest = close < 0 ? '' : value.slice(close + 1);
    if (close >= 0 && (rest === '' || (rest.startsWith(':') && allDigits(rest.slice(1))))) {
      return value.slice(1, close);
    }
  }
  const colon = value.lastIndexOf(':');
  // One colon: name:port or v4:port. Several without brackets: a bare IPv6 address.
  if (colon >= 0 && value.indexOf(':') === colon) return value.slice(0, colon);
  return value;
}

/** Addresses of this machine's interfaces (Go's isLocalIP), read when needed: interfaces come and go. */
function isInterfaceAddress(ip: string): boolean {
  return Object.values(networkInterfaces()).some((list) => (list ?? []).some((info) => unmap(info.address) === ip));
}

/**
 * Ollama's DNS-rebinding guard (reference/ollama-api.md §1.3, `allowedHostsMiddleware`): decides whether a request's
 * Host header may be served. Only a daemon listening on a loopback address checks; then an IP host passes when it is
 * loopback, private, unspecified or an address of a local interface, and a name passes when it is empty,
 * `localhost`, this machine's hostname, or ends in `.localhost`, `.local` or `.internal`.
 */
export class HostPolicy {
  private readonly machineName = hostname().toLowerCase();

  /**
   * @param listenAddress the IP the server is bound to, as `server.address().address` reports it; undefined when not
   *   known (not listening on TCP), which disables the check like Ollama's nil listener address.
   */
  constructor(private readonly listenAddress: () => string | undefined) {}

  /** Whether the check applies: the server is bound to a loopback address. */
  get enforced(): boolean {
    return isLoopbackAddress(this.listenAddress());
  }

  /**
   * Whether a request with this Host header (undefined = absent) may be served. A value longer than
   * {@link MAX_HOST_LENGTH} is not (a host name has at most 253 characters).
   */
  allows(hostHeader: string | undefined): boolean {
    if (!this.enforced) return true;
    if (hostHeader !== undefined && hostHeader.length > MAX_HOST_LENGTH) return false;
    const host = hostOfHeader(hostHeader ?? '');
    const ip = unmap(host);
    const family = isIP(ip);
    if (family !== 0) {
      return LOCAL_RANGES.check(ip, family === 4 ? 'ipv4' : 'ipv6') || isInterfaceAddress(ip);
    }
    return this.allowsName(host);
  }

  /** Whether a host name (not an IP) is one of this machine's (Ollama's `allowedHost`). */
  allowsName(host: string): boolean {
    if (host === '' || host === 'localhost' || host === this.machineName) return true;
    return ['.localhost', '.local', '.internal'].some((suffix) => host.endsWith(suffix));
  }
}
