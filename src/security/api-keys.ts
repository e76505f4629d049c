import { Logger } from '@nestjs/common';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { bearerToken, MAX_API_KEY_LENGTH, MAX_AUTHORIZATION_LENGTH } from './header-values';

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

/** Keys of a keys file: one per line; blank lines and lines starting with `#` are skipped, whitespace trimmed. */
export function parseKeysFile(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/**
 * The keys a request may present (LLAMAD_API_KEYS and LLAMAD_API_KEYS_FILE; docs/security.md). The file is re-read
 * when its size, mtime or inode changes (checked with one `stat` per call of {@link matches}) and on {@link reload}
 * (SIGHUP). A configured file that cannot be read counts as holding no key: the check then fails closed. Only
 * sha256 digests of the keys are kept; no key is ever logged. Reads of the file never overlap: a read that is asked
 * for while one runs waits for it and then reads again, so the newest read is always the one installed (two
 * overlapping reloads cannot install the older file's keys last).
 */
export class ApiKeySource {
  private readonly logger = new Logger('Security');
  private readonly envDigests: Buffer[];
  private fileDigests: Buffer[] = [];
  /** `size:mtimeNs:ino` of the file as last read; '' = not read yet (or forced reload). */
  private fileStamp = '';
  private lastFileError = '';
  /** The file read in progress, and the one queued behind it (shared by every caller that arrives meanwhile). */
  private reading?: Promise<void>;
  private queued?: Promise<void>;

  /**
   * @param envKeys keys from LLAMAD_API_KEYS.
   * @param file absolute path of the keys file; '' = none.
   * @param io file-system calls (tests); default node:fs.
   */
  constructor(
    envKeys: readonly string[],
    private readonly file: string,
    private readonly io: KeysFileIo = NODE_IO,
  ) {
    this.envDigests = envKeys.filter((key) => key !== '').map(digest);
  }

  /** Whether keys are required at all: keys were given, or a keys file is configured (even an empty one). */
  get enabled(): boolean {
    return this.envDigests.length > 0 || this.file !== '';
  }

  /** Forgets the file's stamp so the next check re-reads it (SIGHUP). */
  reload(): void {
    this.fileStamp = '';
  }

  /**
   * Whether `presented` is one of the keys. Compares against every key in constant time per key (no early exit on
   * the first byte that differs, nor on the first key that matches).
   */
  async matches(presented: string): Promise<boolean> {
    return (await this.identify(presented)) !== undefined;
  }

  /**
   * The id of the key `presented` is, `key:<12 hex of its sha256>` (a principal that names the key without revealing
   * it), or undefined when it is none of them. Constant time per key, as {@link matches}.
   */
  async identify(presented: string): Promise<string | undefined> {
    await this.refreshFile();
    const candidate = digest(presented);
    let found = false;
    for (const key of [...this.envDigests, ...this.fileDigests]) {
      if (timingSafeEqual(key, candidate)) found = true;
    }
    return found ? `key:${candidate.toString('hex').slice(0, KEY_ID_HEX)}` : undefined;
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
    try {
      const info = await this.io.stat(this.file);
      const stamp = `${info.size}:${info.mtimeNs}:${info.ino}`;
      if (stamp === this.fileStamp) return;
      const keys = parseKeysFile(await this.io.readFile(this.file));
      this.fileDigests = keys.map(digest);
      this.fileStamp = stamp;
      this.lastFileError = '';
      this.logger.log(`API keys file read: ${keys.length} key(s)`);
    } catch (err) {
      this.fileDigests = [];
      this.fileStamp = '';
      const message = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      if (message !== this.lastFileError) {
        this.logger.warn(`API keys file unreadable (${message}): every keyed request is refused until it is fixed`);
        this.lastFileError = message;
      }
    }
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
