import { createHash, randomBytes } from 'node:crypto';
import { RegistryError } from '../common/errors';

/**
 * The token request of Ollama's key-signing handshake (reference/ollama-api.md §6.2 steps 2–3), built exactly like
 * Ollama's `registryChallenge.URL()` / `getAuthorizationToken` so the signed string is byte-identical to what
 * ollama.com verifies.
 */

/** Go's `url.QueryEscape`: keeps `A–Z a–z 0–9 - _ . ~`, space → `+`, everything else `%XX` (upper-case hex). */
export function goQueryEscape(value: string): string {
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    if (/[A-Za-z0-9\-_.~]/.test(c)) out += c;
    else if (c === ' ') out += '+';
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** Go's `url.Values.Encode`: keys sorted, each key's values in insertion order, `k=v` joined by `&`. */
export function goEncodeValues(values: Map<string, string[]>): string {
  return [...values.keys()]
    .sort()
    .flatMap((k) => (values.get(k) ?? []).map((v) => `${goQueryEscape(k)}=${goQueryEscape(v)}`))
    .join('&');
}

/** A fresh nonce: base64url (no padding) of 16 random bytes (Ollama's `auth.NewNonce(rand.Reader, 16)`). */
export function newNonce(): string {
  return randomBytes(16).toString('base64url');
}

/** Inputs of buildChallengeUrl; `ts` and `nonce` default to now and newNonce(). */
export interface ChallengeParams {
  realm: string;
  service?: string;
  /** Space-separated scopes; each becomes one `scope=` value. */
  scope?: string;
  /** Unix seconds. */
  ts?: number;
  nonce?: string;
}

/**
 * Builds `<realm>?nonce=…&scope=…[&scope=…]&service=…&ts=<unix>` (§6.2 step 2): the realm's own query values are
 * kept, then `service`, one `scope` per space-separated entry, `ts` and `nonce` are added, and the query is encoded
 * like Go's `url.Values.Encode` (sorted keys).
 * @returns the full URL as a string (the exact text that is signed and requested).
 * @throws RegistryError `unauthorized: access denied` (401) for a realm that is not an absolute http(s) URL.
 */
export function buildChallengeUrl(p: ChallengeParams): URL {
  let realm: URL;
  try {
    realm = new URL(p.realm);
  } catch {
    throw new RegistryError('unauthorized: access denied', 401);
  }
  if (realm.protocol !== 'http:' && realm.protocol !== 'https:') {
    throw new RegistryError('unauthorized: access denied', 401);
  }
  const values = new Map<string, string[]>();
  const add = (k: string, v: string) => values.set(k, [...(values.get(k) ?? []), v]);
  for (const [k, v] of realm.searchParams) add(k, v);
  add('service', p.service ?? '');
  for (const scope of (p.scope ?? '').split(' ')) add('scope', scope);
  add('ts', String(p.ts ?? Math.floor(Date.now() / 1000)));
  add('nonce', p.nonce ?? newNonce());
  realm.search = `?${goEncodeValues(values)}`;
  realm.hash = '';
  return realm;
}

/** `base64(hex(sha256("")))`: the body-hash field of the signed string (the token GET has no body). */
export const EMPTY_BODY_HASH = Buffer.from(createHash('sha256').update('').digest('hex'), 'utf8').toString('base64');

/** The string that is signed (§6.2 step 3): `GET,<full token URL>,<base64(hex(sha256("")))>`. */
export function challengeSigningString(tokenUrl: URL | string): string {
  return `GET,${tokenUrl.toString()},${EMPTY_BODY_HASH}`;
}

/**
 * Refuses to send a signature to another host than the one that challenged (§6.2 step 2). Hosts compare with their
 * port, as Go's `URL.Host`.
 * @throws RegistryError `realm host "<realm host>" does not match original host "<request host>"` (401).
 */
export function checkRealmHost(tokenUrl: URL, requestUrl: URL | string): void {
  const original = new URL(requestUrl.toString()).host;
  if (tokenUrl.host !== original) {
    throw new RegistryError(`realm host "${tokenUrl.host}" does not match original host "${original}"`, 401);
  }
}
