import { Logger } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { bearerToken, MAX_API_KEY_LENGTH, MAX_AUTHORIZATION_LENGTH } from './header-values';
import { KeyEntry, KeysFileError, readKeysFile } from './keys-file';
import type { TenantPolicy } from './tenant-policy';

/** The file-system calls the key source makes (tests replace them to force overlapping reads). */
export interface KeysFileIo {
  stat(path: string): Promise<{ size: bigint; mtimeNs: bigint; ino: bigint }>;
  readFile(path: string): Promise<string>;
}

const NODE_IO: KeysFileIo = {
  stat: (path) => stat(path, { bigint: true }),
  readFile: (path) => readFile(path, 'utf8'),
};

/** Hex characters of a key's sha256 that name it in a principal (`key:<12 hex>`): never the key itself. */
const KEY_ID_HEX = 12;

/** sha256 of a key: comparing fixed-size digests keeps the comparison constant-time whatever the key lengths. */
function digest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

/** Who a key is (structurally a Principal of authorizer.ts): its id, and the name and policy of its file entry. */
export interface KeyPrincipal {
  /** `key:<12 hex of the key's sha256>`: names the key without revealing it. */
  readonly id: string;
  /** The entry's `name` (document form only). */
  readonly name?: string;
  /** The entry's policy (document form only); absent for LLAMAD_API_KEYS and key lines: an unlimited admin. */
  readonly policy?: TenantPolicy;
}

/** A key as kept: its digest and who it is. */
interface KnownKey {
  digest: Buffer;
  principal: KeyPrincipal;
}

function knownKey(entry: KeyEntry): KnownKey {
  const keyDigest = digest(entry.key);
  const id = `key:${keyDigest.toString('hex').slice(0, KEY_ID_HEX)}`;
  const name = entry.policy?.name;
  return {
    digest: keyDigest,
    principal: Object.freeze({
      id,
      ...(name !== undefined ? { name } : {}),
      ...(entry.policy ? { policy: entry.policy } : {}),
    }),
  };
}

/**
 * The keys a request may present (LLAMAD_API_KEYS and LLAMAD_API_KEYS_FILE; docs/security.md "API keys" and
 * "Tenants"). The file holds one key a line, or a YAML/JSON document with a policy per key (keys-file.ts). It is
 * re-read when its size, mtime or inode changes (checked with one `stat` per call of {@link identify}) and on
 * {@link reload} (SIGHUP). A configured file that cannot be read counts as holding no key: the check then fails
 * closed. A file that is read but cannot be used (a syntax error, a field that fails validation) keeps the keys and
 * policies of the last good read, and one warning line says why (line or field, never a key); when there was no good
 * read yet, it holds no key (fails closed). Only sha256 digests of the keys are kept; no key is ever logged. Reads of
 * the file never overlap: a read that is asked for while one runs waits for it and then reads again, so the newest
 * read is always the one installed (two overlapping reloads cannot install the older file's keys last).
 */
export class ApiKeySource {
  private readonly logger = new Logger('Security');
  private readonly envKeys: KnownKey[];
  private fileKeys: KnownKey[] = [];
  /** `size:mtimeNs:ino` of the file as last read; '' = not read yet (or forced reload). */
  private fileStamp = '';
  private lastFileError = '';
  /** The file read in progress, and the one queued behind it (shared by every caller that arrives meanwhile). */
  private reading?: Promise<void>;
  private queued?: Promise<void>;

  /**
   * @param envKeys keys from LLAMAD_API_KEYS (no policy: unlimited admins).
   * @param file absolute path of the keys file; '' = none.
   * @param io file-system calls (tests); default node:fs.
   */
  constructor(
    envKeys: readonly string[],
    private readonly file: string,
    private readonly io: KeysFileIo = NODE_IO,
  ) {
    this.envKeys = envKeys.filter((key) => key !== '').map((key) => knownKey({ key }));
  }

  /** Whether keys are required at all: keys were given, or a keys file is configured (even an empty one). */
  get enabled(): boolean {
    return this.envKeys.length > 0 || this.file !== '';
  }

  /** Forgets the file's stamp so the next check re-reads it, and logs its state again (SIGHUP). */
  reload(): void {
    this.fileStamp = '';
    this.lastFileError = '';
  }

  /**
   * Whether `presented` is one of the keys. Compares against every key in constant time per key (no early exit on
   * the first byte that differs, nor on the first key that matches).
   */
  async matches(presented: string): Promise<boolean> {
    return (await this.identify(presented)) !== undefined;
  }

  /**
   * Who the key `presented` is: its id `key:<12 hex of its sha256>` (names the key without revealing it) and, for a
   * document entry, its `name` and policy; undefined when it is none of the keys. Constant time per key, as
   * {@link matches} (every key is compared; the last match wins, as a later file entry would).
   */
  async identify(presented: string): Promise<KeyPrincipal | undefined> {
    await this.refreshFile();
    const candidate = digest(presented);
    let found: KeyPrincipal | undefined;
    for (const key of [...this.envKeys, ...this.fileKeys]) {
      if (timingSafeEqual(key.digest, candidate)) found = key.principal;
    }
    return found;
  }

  /** Re-reads the file when it changed; serialized (see the class comment). */
  private refreshFile(): Promise<void> {
    if (this.file === '') return Promise.resolve();
    if (!this.reading) {
      this.reading = this.readFileOnce().finally(() => {
        this.reading = undefined;
      });
      return this.reading;
    }
    this.queued ??= this.reading.then(() => {
      this.queued = undefined;
      return this.refreshFile();
    });
    return this.queued;
  }

  private async readFileOnce(): Promise<void> {
    let stamp = '';
    let entries: KeyEntry[];
    try {
      const info = await this.io.stat(this.file);
      stamp = `${info.size}:${info.mtimeNs}:${info.ino}`;
      if (stamp === this.fileStamp) return;
      entries = readKeysFile(await this.io.readFile(this.file));
    } catch (err) {
      if (err instanceof KeysFileError) {
        // Kept: the keys and policies of the last good read (none before the first one). Not re-read until the file
        // changes again or SIGHUP.
        this.fileStamp = stamp;
        this.warnOnce(
          `API keys file not used (${err.message}): ${
            this.fileKeys.length > 0 ? 'the previous keys and policies stay in force' : 'every keyed request is refused'
          } until it is fixed`,
        );
        return;
      }
      this.fileKeys = [];
      this.fileStamp = '';
      const message = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      this.warnOnce(`API keys file unreadable (${message}): every keyed request is refused until it is fixed`);
      return;
    }
    this.fileKeys = entries.map(knownKey);
    this.fileStamp = stamp;
    this.lastFileError = '';
    const policies = entries.filter((entry) => entry.policy !== undefined).length;
    this.logger.log(`API keys file read: ${entries.length} key(s)${policies > 0 ? `, ${policies} with a policy` : ''}`);
  }

  /** Logs a file problem once (until it changes, the file is read successfully, or SIGHUP). */
  private warnOnce(message: string): void {
    if (message === this.lastFileError) return;
    this.logger.warn(message);
    this.lastFileError = message;
  }
}

/**
 * The keys a request presents: `Authorization: Bearer <key>` (OpenAI's SDK, curl) and `x-api-key: <key>`
 * (Anthropic's SDK, Claude Code). Either may hold the key. Parsed in one pass without regular expressions; a value
 * longer than {@link MAX_AUTHORIZATION_LENGTH} / {@link MAX_API_KEY_LENGTH} presents no key (so a 15 KB header is a
 * plain 401, at the cost of one length check).
 */
export function presentedKeys(headers: IncomingHttpHeaders): string[] {
  const keys: string[] = [];
  const authorization = headers.authorization;
  const bearer = typeof authorization === 'string' ? bearerToken(authorization, MAX_AUTHORIZATION_LENGTH) : undefined;
  if (bearer !== undefined) keys.push(bearer);
  const apiKey = headers['x-api-key'];
  for (const value of Array.isArray(apiKey) ? apiKey : apiKey === undefined ? [] : [apiKey]) {
    if (value.length > MAX_API_KEY_LENGTH) continue;
    const key = value.trim();
    if (key !== '') keys.push(key);
  }
  return keys;
}
