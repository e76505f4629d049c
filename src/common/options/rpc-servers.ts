/**
 * llama.cpp RPC worker lists (`LLAMAD_RPC_SERVERS`, Modelfile `PARAMETER rpc`): `host:port` entries separated by
 * commas, as llama-server's `--rpc`. The host is an IPv4 address or a host name (ggml-rpc connects over IPv4 and splits
 * at the first colon, so IPv6 addresses cannot be given).
 */

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
