import { createPrivateKey, createPublicKey, generateKeyPairSync, KeyObject, randomBytes, sign } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir, hostname, userInfo } from 'node:os';
import { join } from 'node:path';

/**
 * Ollama's ed25519 identity (reference/ollama-api.md §6.2 step 3–4): `~/.ollama/id_ed25519` in the OpenSSH
 * private-key format (unencrypted) and `~/.ollama/id_ed25519.pub` as an authorized_keys line
 * `ssh-ed25519 <base64 public key blob> <comment>`.
 *
 * The key directory is `$OLLAMA_KEY_DIR` when set (tests), else `$HOME/.ollama` (Ollama's own rule). It is read
 * here rather than in src/config because the registry reads its other per-request settings (credentials,
 * registry-credentials.ts) from the environment on every use as well.
 */

const MAGIC = Buffer.from('openssh-key-v1\0', 'latin1');
const KEY_TYPE = 'ssh-ed25519';
const PEM_BEGIN = '-----BEGIN OPENSSH PRIVATE KEY-----';
const PEM_END = '-----END OPENSSH PRIVATE KEY-----';

/** The raw key material of an ed25519 identity. */
export interface Ed25519KeyMaterial {
  /** 32-byte private seed. */
  seed: Buffer;
  /** 32-byte public key. */
  publicKey: Buffer;
  /** The key comment (often `user@host`). */
  comment: string;
}

/** SSH wire `string`: uint32 big-endian length + bytes. */
function sshString(value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : value;
  const len = Buffer.alloc(4);
  len.writeUInt32BE(bytes.length);
  return Buffer.concat([len, bytes]);
}

function uint32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

/** Sequential reader of SSH wire data; every read throws `invalid OpenSSH private key` when out of bounds. */
class WireReader {
  private offset = 0;
  constructor(private readonly buf: Buffer) {}
  uint32(): number {
    if (this.offset + 4 > this.buf.length) throw new Error('invalid OpenSSH private key: truncated');
    const v = this.buf.readUInt32BE(this.offset);
    this.offset += 4;
    return v;
  }
  bytes(): Buffer {
    const len = this.uint32();
    if (this.offset + len > this.buf.length) throw new Error('invalid OpenSSH private key: truncated');
    const v = this.buf.subarray(this.offset, this.offset + len);
    this.offset += len;
    return v;
  }
  string(): string {
    return this.bytes().toString('utf8');
  }
  rest(): Buffer {
    return this.buf.subarray(this.offset);
  }
}

/** The SSH public key blob: string "ssh-ed25519" + string <32-byte key> (the middle field of a .pub line). */
export function publicKeyBlob(publicKey: Buffer): Buffer {
  return Buffer.concat([sshString(KEY_TYPE), sshString(publicKey)]);
}

/**
 * Serializes an unencrypted OpenSSH private key (PROTOCOL.key): magic `openssh-key-v1\0`, cipher `none`, kdf `none`,
 * empty kdf options, 1 key, the public key blob, then the private section (two equal random check ints, key type,
 * public key, 64-byte seed‖public, comment, padding 1, 2, 3 … to a multiple of 8), base64 in 70-column PEM lines.
 * @returns the PEM text, ending with a newline.
 */
export function encodeOpenSshPrivateKey(key: Ed25519KeyMaterial): string {
  if (key.seed.length !== 32 || key.publicKey.length !== 32) throw new Error('ed25519 keys are 32 bytes');
  const check = randomBytes(4).readUInt32BE(0);
  let priv = Buffer.concat([
    uint32(check),
    uint32(check),
    sshString(KEY_TYPE),
    sshString(key.publicKey),
    sshString(Buffer.concat([key.seed, key.publicKey])),
    sshString(key.comment),
  ]);
  const pad: number[] = [];
  for (let i = 1; (priv.length + pad.length) % 8 !== 0; i++) pad.push(i);
  priv = Buffer.concat([priv, Buffer.from(pad)]);
  const body = Buffer.concat([
    MAGIC,
    sshString('none'),
    sshString('none'),
    sshString(Buffer.alloc(0)),
    uint32(1),
    sshString(publicKeyBlob(key.publicKey)),
    sshString(priv),
  ]).toString('base64');
  const lines = body.match(/.{1,70}/g) ?? [];
  return `${PEM_BEGIN}\n${lines.join('\n')}\n${PEM_END}\n`;
}

/**
 * Parses an unencrypted OpenSSH ed25519 private key (as written by encodeOpenSshPrivateKey or
 * `ssh-keygen -t ed25519 -N ""`).
 * @throws Error `invalid OpenSSH private key: <why>` for another PEM type, a cipher other than `none` (passphrase
 *   keys are not supported, as in Ollama), a non-ed25519 key, mismatching check ints or public halves.
 */
export function parseOpenSshPrivateKey(pem: string): Ed25519KeyMaterial {
  const begin = pem.indexOf(PEM_BEGIN);
  const end = pem.indexOf(PEM_END);
  if (begin < 0 || end < begin) throw new Error('invalid OpenSSH private key: no OPENSSH PRIVATE KEY block');
  const raw = Buffer.from(pem.slice(begin + PEM_BEGIN.length, end).replace(/\s+/g, ''), 'base64');
  if (raw.length < MAGIC.length || !raw.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw new Error('invalid OpenSSH private key: bad magic');
  }
  const r = new WireReader(raw.subarray(MAGIC.length));
  const cipher = r.string();
  const kdf = r.string();
  r.bytes(); // kdf options
  if (cipher !== 'none' || kdf !== 'none') {
    throw new Error('invalid OpenSSH private key: encrypted keys are not supported');
  }
  if (r.uint32() !== 1) throw new Error('invalid OpenSSH private key: expected exactly one key');
  const pubBlob = new WireReader(r.bytes());
  if (pubBlob.string() !== KEY_TYPE) throw new Error('invalid OpenSSH private key: not an ed25519 key');
  const outerPub = Buffer.from(pubBlob.bytes());
  const p = new WireReader(r.bytes());
  if (p.uint32() !== p.uint32()) throw new Error('invalid OpenSSH private key: check ints differ');
  if (p.string() !== KEY_TYPE) throw new Error('invalid OpenSSH private key: not an ed25519 key');
  const publicKey = Buffer.from(p.bytes());
  const both = p.bytes();
  const comment = p.string();
  if (publicKey.length !== 32 || both.length !== 64 || !outerPub.equals(publicKey)) {
    throw new Error('invalid OpenSSH private key: bad ed25519 key lengths');
  }
  if (!both.subarray(32).equals(publicKey)) throw new Error('invalid OpenSSH private key: public halves differ');
  return { seed: Buffer.from(both.subarray(0, 32)), publicKey, comment };
}

/** A fresh ed25519 key pair from node:crypto, with a `user@host` comment. */
export function generateKeyMaterial(comment = defaultComment()): Ed25519KeyMaterial {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  return {
    seed: Buffer.from(jwk.d ?? '', 'base64url'),
    publicKey: Buffer.from(jwk.x ?? '', 'base64url'),
    comment,
  };
}

function defaultComment(): string {
  try {
    return `${userInfo().username}@${hostname()}`;
  } catch {
    return 'llamad';
  }
}

/** An ed25519 key ready to sign registry challenges. */
export class Ed25519Identity {
  private readonly privateKey: KeyObject;
  /** The SSH public key blob (string "ssh-ed25519" + string key). */
  readonly blob: Buffer;

  constructor(readonly material: Ed25519KeyMaterial) {
    const x = material.publicKey.toString('base64url');
    this.privateKey = createPrivateKey({
      key: { kty: 'OKP', crv: 'Ed25519', d: material.seed.toString('base64url'), x },
      format: 'jwk',
    });
    const derived = createPublicKey(this.privateKey).export({ format: 'jwk' }).x;
    if (derived !== x) throw new Error('invalid OpenSSH private key: public key does not match the private key');
    this.blob = publicKeyBlob(material.publicKey);
  }

  /** The `.pub` line: `ssh-ed25519 <base64 blob> <comment>` (no trailing newline). */
  get authorizedKey(): string {
    const base = `${KEY_TYPE} ${this.blob.toString('base64')}`;
    return this.material.comment ? `${base} ${this.material.comment}` : base;
  }

  /** The raw 64-byte ed25519 signature of `data`. */
  sign(data: Buffer | string): Buffer {
    return sign(null, typeof data === 'string' ? Buffer.from(data, 'utf8') : data, this.privateKey);
  }

  /**
   * Ollama's `auth.Sign` value (§6.2 step 4): `<base64 public key blob>:<base64 signature>`. As in Ollama (Go's
   * `ssh.Signature.Blob` for ed25519) the signature part is the raw 64-byte ed25519 signature, not the
   * SSH-framed `string "ssh-ed25519" + string sig`.
   */
  authorization(data: Buffer | string): string {
    return `${this.blob.toString('base64')}:${this.sign(data).toString('base64')}`;
  }
}

/** `$OLLAMA_KEY_DIR`, else `$HOME/.ollama`. */
export function keyDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.OLLAMA_KEY_DIR || join(env.HOME || homedir(), '.ollama');
}

/**
 * Reads `<dir>/id_ed25519`; when it does not exist, generates a key and writes it (mode 0600, atomically) with
 * `<dir>/id_ed25519.pub` (mode 0644) — what `ollama serve` does on first start.
 * @throws Error from parseOpenSshPrivateKey for an unreadable key; file-system errors other than ENOENT as thrown.
 */
export function loadOrCreateIdentity(dir: string = keyDir()): Promise<Ed25519Identity> {
  // Concurrent first uses in one process share one read-or-generate, so they never write two different keys.
  let pending = loading.get(dir);
  if (!pending) {
    pending = readOrGenerate(dir).finally(() => loading.delete(dir));
    loading.set(dir, pending);
  }
  return pending;
}

const loading = new Map<string, Promise<Ed25519Identity>>();

async function readOrGenerate(dir: string): Promise<Ed25519Identity> {
  const path = join(dir, 'id_ed25519');
  try {
    return new Ed25519Identity(parseOpenSshPrivateKey(await readFile(path, 'utf8')));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const identity = new Ed25519Identity(generateKeyMaterial());
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await writeFile(tmp, encodeOpenSshPrivateKey(identity.material), { mode: 0o600 });
    await writeFile(`${path}.pub`, `${identity.authorizedKey}\n`, { mode: 0o644 });
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return identity;
}
