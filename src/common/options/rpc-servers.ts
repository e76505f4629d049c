/**
 * llama.cpp RPC worker lists (`LLAMAD_RPC_SERVERS`, Modelfile `PARAMETER rpc`): `host:port` entries separated by
 * commas, as llama-server's `--rpc`. The host is an IPv4 address or a host name (ggml-rpc connects over IPv4 and splits
 * at the first colon, so IPv6 addresses cannot be given).
 */

import { InvalidRequestError } from '../errors';

/** Whether `entry` is one `host:port` worker address (port 1..65535). */
export function isRpcEndpoint(entry: string): boolean {
  const match = /^([^\s:,]+):(\d{1,5})$/.exec(entry);
  return match !== null && Number(match[2]) >= 1 && Number(match[2]) <= 65535;
}

/**
 * Splits `host:port,host:port` lists (each argument one list; entries trimmed, empty ones dropped, duplicates kept
 * once). The word `none` alone means an explicitly empty list (a Modelfile that opts out of LLAMAD_RPC_SERVERS).
 * @returns the endpoints and the entries that are not `host:port`.
 */
export function splitRpcServers(lists: readonly string[]): { servers: string[]; invalid: string[] } {
  const servers: string[] = [];
  const invalid: string[] = [];
  const entries = lists.flatMap((list) => list.split(',')).map((entry) => entry.trim());
  const nonEmpty = entries.filter((entry) => entry !== '');
  if (nonEmpty.length === 1 && nonEmpty[0].toLowerCase() === 'none') return { servers, invalid };
  for (const entry of nonEmpty) {
    if (!isRpcEndpoint(entry)) invalid.push(entry);
    else if (!servers.includes(entry)) servers.push(entry);
  }
  return { servers, invalid };
}

/**
 * The one 400 for a Modelfile `PARAMETER rpc` (or a JSON create's `parameters.rpc`) that names a worker the operator
 * did not list in LLAMAD_RPC_SERVERS. Fixed text: it does not depend on whether the address exists, resolves or
 * answers (nothing is contacted), so it cannot be used to probe a network.
 */
export const RPC_NOT_ALLOWED_MESSAGE =
  'PARAMETER rpc may only name workers listed in LLAMAD_RPC_SERVERS (docs/security.md "Outbound reach")';

/** `Host:Port` → `host:port` (host names compare case-insensitively). */
function rpcKey(entry: string): string {
  return entry.trim().toLowerCase();
}

/**
 * Checks a model's RPC workers against the operator's allow-list (issue 23 item 3; docs/security.md): every entry
 * must be one of `allowed` (LLAMAD_RPC_SERVERS). An empty list (`PARAMETER rpc none`) or no `rpc` is always fine.
 * Pure: no name resolution, no connection.
 * @param servers the model's `rpc` parameter value (undefined when it has none).
 * @param allowed the operator's workers.
 * @throws InvalidRequestError {@link RPC_NOT_ALLOWED_MESSAGE}
 */
export function checkRpcAllowed(servers: unknown, allowed: readonly string[]): void {
  if (!Array.isArray(servers) || servers.length === 0) return;
  const allow = new Set(allowed.map(rpcKey));
  if (servers.some((entry) => typeof entry !== 'string' || !allow.has(rpcKey(entry)))) {
    throw new InvalidRequestError(RPC_NOT_ALLOWED_MESSAGE);
  }
}
