import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, createPublicKey, verify } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import {
  buildChallengeUrl,
  challengeSigningString,
  checkRealmHost,
  EMPTY_BODY_HASH,
  Ed25519Identity,
  encodeOpenSshPrivateKey,
  generateKeyMaterial,
  goQueryEscape,
  keyDir,
  loadOrCreateIdentity,
  parseOpenSshPrivateKey,
  publicKeyBlob,
} from '../../../src/registry';
import { missingPrograms } from '../../utils/programs';

/** Verifies `<pub blob b64>:<sig b64>` over `data` with node:crypto, from the blob alone. */
function verifyAuthorization(header: string, data: string): boolean {
  const [pubB64, sigB64] = header.split(':');
  const blob = Buffer.from(pubB64, 'base64');
  const typeLen = blob.readUInt32BE(0);
  assert.equal(blob.subarray(4, 4 + typeLen).toString(), 'ssh-ed25519');
  const keyLen = blob.readUInt32BE(4 + typeLen);
  const raw = blob.subarray(8 + typeLen, 8 + typeLen + keyLen);
  const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') }, format: 'jwk' });
  return verify(null, Buffer.from(data), key, Buffer.from(sigB64, 'base64'));
}

/** Why the ssh-keygen interop test cannot run here (undefined when ssh-keygen is installed). */
const sshKeygenMissing = missingPrograms('ssh-keygen');

// Ollama's ed25519 identity and key-signing handshake (reference/ollama-api.md §6.2).
describe('ollama ed25519 key (OpenSSH format)', () => {
  it('generate → encode → parse round trip; PEM layout; padding 1,2,3…', () => {
    const m = generateKeyMaterial('me@host');
    const pem = encodeOpenSshPrivateKey(m);
    assert.match(
      pem,
      /^-----BEGIN OPENSSH PRIVATE KEY-----\n([A-Za-z0-9+/=]{1,70}\n)+-----END OPENSSH PRIVATE KEY-----\n$/,
    );
    const back = parseOpenSshPrivateKey(pem);
    assert.deepEqual(back.seed, m.seed);
    assert.deepEqual(back.publicKey, m.publicKey);
    assert.equal(back.comment, 'me@host');
    const raw = Buffer.from(pem.split('\n').slice(1, -2).join(''), 'base64');
    assert.equal(raw.subarray(0, 15).toString('latin1'), 'openssh-key-v1\0');
    // The private section (the last wire string) is a multiple of 8 bytes and ends with 1, 2, 3… padding.
    const pubLen = raw.readUInt32BE(15 + 4 + 4 + 4 + 4 + 4 + 4);
    const privStart = 15 + 4 + 4 + 4 + 4 + 4 + 4 + 4 + pubLen;
    const privLen = raw.readUInt32BE(privStart);
    assert.equal(privStart + 4 + privLen, raw.length);
    assert.equal(privLen % 8, 0);
    const priv = raw.subarray(privStart + 4);
    assert.equal(priv.readUInt32BE(0), priv.readUInt32BE(4), 'check ints');
    const pad = (8 - ((4 + 4 + 4 + 11 + 4 + 32 + 4 + 64 + 4 + 7) % 8)) % 8;
    assert.deepEqual(
      [...priv.subarray(priv.length - pad)],
      Array.from({ length: pad }, (_, i) => i + 1),
    );
    assert.equal(new Ed25519Identity(back).authorizedKey.startsWith('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI'), true);
  });

  it('rejects other PEM blocks, bad magic, tampered public halves', () => {
    assert.throws(() => parseOpenSshPrivateKey('-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----'));
    assert.throws(
      () =>
        parseOpenSshPrivateKey(
          `-----BEGIN OPENSSH PRIVATE KEY-----\n${Buffer.from('nope').toString('base64')}\n-----END OPENSSH PRIVATE KEY-----\n`,
        ),
      /bad magic/,
    );
    const m = generateKeyMaterial('x');
    const other = generateKeyMaterial('x');
    assert.throws(() => new Ed25519Identity({ ...m, publicKey: other.publicKey }), /does not match/);
  });

  it('signature verifies with node:crypto against the public key blob; raw 64-byte signature', () => {
    const id = new Ed25519Identity(generateKeyMaterial('t'));
    const header = id.authorization('GET,https://example/token?x=1,abc');
    assert.equal(Buffer.from(header.split(':')[1], 'base64').length, 64);
    assert.equal(header.split(':')[0], id.authorizedKey.split(' ')[1]);
    assert.deepEqual(Buffer.from(header.split(':')[0], 'base64'), publicKeyBlob(id.material.publicKey));
    assert.equal(verifyAuthorization(header, 'GET,https://example/token?x=1,abc'), true);
    assert.equal(verifyAuthorization(header, 'GET,https://example/token?x=2,abc'), false);
  });

  it('parses a key made by ssh-keygen, and ssh-keygen reads ours', { skip: sshKeygenMissing }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'llamad-key-'));
    try {
      const file = join(dir, 'id_ed25519');
      const r = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'kg@test', '-f', file]);
      assert.equal(r.status, 0, r.stderr?.toString());
      const parsed = parseOpenSshPrivateKey(await readFile(file, 'utf8'));
      const id = new Ed25519Identity(parsed);
      assert.equal(id.authorizedKey, (await readFile(`${file}.pub`, 'utf8')).trim());
      assert.equal(verifyAuthorization(id.authorization('hello'), 'hello'), true);
      // Ours, read back by ssh-keygen (-y derives the public key from the private file).
      const mine = new Ed25519Identity(generateKeyMaterial('ours'));
      const ourFile = join(dir, 'ours');
      await writeFile(ourFile, encodeOpenSshPrivateKey(mine.material), { mode: 0o600 });
      const y = spawnSync('ssh-keygen', ['-y', '-f', ourFile], { encoding: 'utf8' });
      assert.equal(y.status, 0, y.stderr);
      assert.equal(
        y.stdout.trim().split(' ').slice(0, 2).join(' '),
        mine.authorizedKey.split(' ').slice(0, 2).join(' '),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('loadOrCreateIdentity generates id_ed25519 (0600) + .pub once, then reads the same key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'llamad-key-'));
    try {
      const [a, b] = await Promise.all([
        loadOrCreateIdentity(join(dir, 'sub')),
        loadOrCreateIdentity(join(dir, 'sub')),
      ]);
      assert.equal(a.authorizedKey, b.authorizedKey);
      const st = await stat(join(dir, 'sub', 'id_ed25519'));
      assert.equal(st.mode & 0o777, 0o600);
      assert.equal((await readFile(join(dir, 'sub', 'id_ed25519.pub'), 'utf8')).trim(), a.authorizedKey);
      const again = await loadOrCreateIdentity(join(dir, 'sub'));
      assert.equal(again.authorizedKey, a.authorizedKey);
      assert.equal(keyDir({ OLLAMA_KEY_DIR: dir }), dir);
      assert.equal(keyDir({ HOME: '/home/x' }), '/home/x/.ollama');
      await writeFile(join(dir, 'sub', 'id_ed25519'), 'garbage');
      await assert.rejects(loadOrCreateIdentity(join(dir, 'sub')), /invalid OpenSSH private key/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('key-signing challenge (§6.2)', () => {
  it('builds <realm>?nonce&scope…&service&ts like Go url.Values.Encode, keeping realm query values', () => {
    const url = buildChallengeUrl({
      realm: 'https://ollama.com/token?x=1',
      service: 'ollama.com',
      scope: 'repository:library/llama3.2:pull repository:me/m:pull,push',
      ts: 1700000000,
      nonce: 'AAECAwQFBgcICQoLDA0ODw',
    });
    assert.equal(
      url.toString(),
      'https://ollama.com/token?nonce=AAECAwQFBgcICQoLDA0ODw&scope=repository%3Alibrary%2Fllama3.2%3Apull' +
        '&scope=repository%3Ame%2Fm%3Apull%2Cpush&service=ollama.com&ts=1700000000&x=1',
    );
    const fresh = buildChallengeUrl({ realm: 'http://h:1/t', service: 's', scope: 'a' });
    const nonce = fresh.searchParams.get('nonce') ?? '';
    assert.match(nonce, /^[A-Za-z0-9_-]{22}$/);
    assert.ok(Math.abs(Number(fresh.searchParams.get('ts')) - Date.now() / 1000) < 5);
    assert.equal(goQueryEscape('a b~*'), 'a+b~%2A');
  });

  it('signs GET,<url>,<base64(hex(sha256("")))>', () => {
    const hex = createHash('sha256').update('').digest('hex');
    assert.equal(EMPTY_BODY_HASH, Buffer.from(hex).toString('base64'));
    assert.equal(
      challengeSigningString(new URL('https://ollama.com/token?ts=1')),
      `GET,https://ollama.com/token?ts=1,${Buffer.from(hex).toString('base64')}`,
    );
    assert.equal(
      EMPTY_BODY_HASH,
      'ZTNiMGM0NDI5OGZjMWMxNDlhZmJmNGM4OTk2ZmI5MjQyN2FlNDFlNDY0OWI5MzRjYTQ5NTk5MWI3ODUyYjg1NQ==',
    );
  });

  it('refuses a realm on another host (port included)', () => {
    const url = buildChallengeUrl({ realm: 'https://auth.evil/token', service: 's', scope: 'x' });
    assert.throws(() => checkRealmHost(url, 'https://ollama.com/v2/library/m/manifests/latest'), {
      message: 'realm host "auth.evil" does not match original host "ollama.com"',
    });
    const port = buildChallengeUrl({ realm: 'http://127.0.0.1:81/token', service: 's', scope: 'x' });
    assert.throws(
      () => checkRealmHost(port, 'http://127.0.0.1:82/v2/'),
      /realm host "127.0.0.1:81" does not match original host "127.0.0.1:82"/,
    );
    assert.doesNotThrow(() => checkRealmHost(port, 'http://127.0.0.1:81/v2/x'));
  });
});
