import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** Username/password for one registry host. Never logged. */
export interface RegistryCredentials {
  username: string;
  password: string;
}

/** Map `host[:port]` → credentials, e.g. `{"127.0.0.1:5000": {"username": "u", "password": "p"}}`. */
export type RegistryCredentialMap = Record<string, RegistryCredentials>;

function parseMap(text: string): RegistryCredentialMap {
  const value: unknown = JSON.parse(text);
  const out: RegistryCredentialMap = {};
  if (!value || typeof value !== 'object') return out;
  for (const [host, entry] of Object.entries(value as Record<string, unknown>)) {
    const e = entry as { username?: unknown; password?: unknown } | null;
    if (e && typeof e.username === 'string' && typeof e.password === 'string') {
      out[host.toLowerCase()] = { username: e.username, password: e.password };
    }
  }
  return out;
}

/**
 * Looks up registry credentials for a host (reference/ollama-api.md §6.2 for the flow they feed). Sources, first
 * match wins, read on every lookup so changes apply without a restart:
 * 1. `OLLAMA_REGISTRY_AUTH`: JSON `{host: {username, password}}`;
 * 2. the file `OLLAMA_REGISTRY_AUTH_FILE`, default `~/.ollama/registry-auth.json`, same shape.
 * Malformed sources are ignored (treated as no credentials). Values are never logged. Called per pull/push request,
 * so the file is read asynchronously (the event loop serves every other client meanwhile).
 * @param env the environment (tests pass their own).
 */
export async function lookupCredentials(
  host: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<RegistryCredentials | undefined> {
  const key = host.toLowerCase();
  const inline = env.OLLAMA_REGISTRY_AUTH;
  if (inline) {
    try {
      const hit = parseMap(inline)[key];
      if (hit) return hit;
    } catch {
      // malformed JSON: ignore
    }
  }
  const file = env.OLLAMA_REGISTRY_AUTH_FILE || join(homedir(), '.ollama', 'registry-auth.json');
  try {
    return parseMap(await readFile(file, 'utf8'))[key];
  } catch {
    return undefined;
  }
}
