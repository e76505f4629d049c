import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger, LoggerService } from '@nestjs/common';
import { after, before, describe, it } from 'node:test';
import { ApiKeySource, KeysFileIo, parseKeysFile, presentedKeys } from '../../../src/security';

/** An in-memory keys file whose every write changes its stamp (as a new mtime would). */
function memoryFile(initial: string): { io: KeysFileIo; write(text: string): void } {
  let content = initial;
  let version = 0;
  return {
    io: {
      stat: () => Promise.resolve({ size: BigInt(content.length), mtimeNs: BigInt(version), ino: 1n }),
      readFile: () => Promise.resolve(content),
    },
    write(text: string) {
      content = text;
      version++;
    },
  };
}

describe('API keys', () => {
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llamad-keys-unit-'));
  });

  after(() => rm(dir, { recursive: true, force: true }));

  it('parseKeysFile: one key a line, comments and blanks skipped, CRLF tolerated', () => {
    assert.deepEqual(parseKeysFile('# c\r\n k1 \r\n\r\nk2\n#k3\n'), ['k1', 'k2']);
  });

  it('presentedKeys reads Bearer (any case) and x-api-key', () => {
    assert.deepEqual(presentedKeys({ authorization: 'Bearer abc' }), ['abc']);
    assert.deepEqual(presentedKeys({ authorization: 'bearer  abc ' }), ['abc']);
    assert.deepEqual(presentedKeys({ authorization: 'Basic abc' }), []);
    assert.deepEqual(presentedKeys({ 'x-api-key': 'k' }), ['k']);
    assert.deepEqual(presentedKeys({ authorization: 'Bearer a', 'x-api-key': 'b' }), ['a', 'b']);
    assert.deepEqual(presentedKeys({}), []);
  });

  it('is disabled without keys, enabled by env keys or by a configured file', () => {
    assert.equal(new ApiKeySource([], '').enabled, false);
    assert.equal(new ApiKeySource(['a'], '').enabled, true);
    assert.equal(new ApiKeySource([], join(dir, 'missing')).enabled, true);
  });

  it('matches exact keys only, from env and file; a missing file matches nothing', async () => {
    const file = join(dir, 'keys');
    await writeFile(file, 'file-key\n');
    const source = new ApiKeySource(['env-key'], file);
    assert.ok(await source.matches('env-key'));
    assert.ok(await source.matches('file-key'));
    for (const wrong of ['', 'env-ke', 'env-key ', 'ENV-KEY', 'file-key\n']) assert.ok(!(await source.matches(wrong)));
    const missing = new ApiKeySource([], join(dir, 'nope'));
    assert.ok(!(await missing.matches('')));
    assert.ok(!(await missing.matches('file-key')));
  });

  it('identify names a key by 12 hex of its sha256, never the key', async () => {
    const source = new ApiKeySource(['secret-key'], '');
    const id = (await source.identify('secret-key'))?.id;
    assert.match(id ?? '', /^key:[0-9a-f]{12}$/);
    assert.ok(!id?.includes('secret'));
    assert.equal(await source.identify('other'), undefined);
  });

  it('two overlapping reloads: reads never overlap, and the newer file wins', async () => {
    let content = 'old-key';
    let version = 0;
    const reads: string[] = [];
    let active = 0;
    let overlapped = false;
    let firstStarted!: () => void;
    const started = new Promise<void>((resolve) => (firstStarted = resolve));
    const io: KeysFileIo = {
      stat: () => Promise.resolve({ size: BigInt(content.length), mtimeNs: BigInt(version), ino: 1n }),
      readFile: async () => {
        active++;
        if (active > 1) overlapped = true;
        const snapshot = content;
        firstStarted();
        // The first read is slow: without serialization it would finish last and install the old key.
        await new Promise((resolve) => setTimeout(resolve, reads.length === 0 ? 50 : 1));
        reads.push(snapshot);
        active--;
        return snapshot;
      },
    };
    const source = new ApiKeySource([], '/keys', io);
    source.reload();
    const first = source.matches('old-key');
    await started; // the file changes while the first read is under way
    content = 'new-key';
    version = 1;
    source.reload();
    const second = source.matches('new-key');
    assert.equal(await first, true);
    assert.equal(await second, true);
    assert.equal(overlapped, false);
    assert.deepEqual(reads, ['old-key', 'new-key']);
    assert.equal(await source.matches('old-key'), false, 'the newer read is the one installed');
    assert.equal(await source.matches('new-key'), true);
  });

  describe('policy documents and reloads', () => {
    const warnings: string[] = [];
    const capture: LoggerService = {
      log: () => undefined,
      warn: (m: unknown) => void warnings.push(String(m)),
      error: (m: unknown) => void warnings.push(String(m)),
    };
    before(() => Logger.overrideLogger(capture));
    after(() => Logger.overrideLogger(false));

    const GOOD = JSON.stringify({
      keys: [
        { key: 'sk-a', name: 'team-a', role: 'user', models: ['demo'], limits: { max_output_tokens: 8 } },
        { key: 'sk-admin' },
      ],
    });

    it('identify returns the entry’s name and policy; env keys and key lines have none', async () => {
      const file = memoryFile(GOOD);
      const source = new ApiKeySource(['env-key'], '/keys', file.io);
      const a = await source.identify('sk-a');
      assert.match(a?.id ?? '', /^key:[0-9a-f]{12}$/);
      assert.equal(a?.name, 'team-a');
      assert.deepEqual(a?.policy, { name: 'team-a', role: 'user', models: ['demo'], limits: { max_output_tokens: 8 } });
      assert.deepEqual(await source.identify('sk-admin'), { id: (await source.identify('sk-admin'))?.id, policy: {} });
      assert.deepEqual(Object.keys((await source.identify('env-key')) ?? {}), ['id']);
      file.write('line-key\n');
      assert.deepEqual(Object.keys((await source.identify('line-key')) ?? {}), ['id']);
      assert.equal(await source.identify('sk-a'), undefined);
    });

    it('a syntax or validation error keeps the previous keys and policy, and logs why once', async () => {
      const file = memoryFile(GOOD);
      const source = new ApiKeySource([], '/keys', file.io);
      assert.equal((await source.identify('sk-a'))?.policy?.role, 'user');
      warnings.length = 0;
      file.write('keys:\n  - key: sk-new\n    limits: {weight: 1\n');
      assert.equal((await source.identify('sk-a'))?.policy?.role, 'user', 'the previous policy stays');
      assert.equal(await source.identify('sk-new'), undefined);
      await source.identify('sk-a');
      assert.equal(warnings.length, 1, warnings.join('\n'));
      assert.match(warnings[0], /API keys file not used \(syntax error at line \d+, column \d+.*previous keys/);
      assert.doesNotMatch(warnings[0], /sk-/);

      file.write(JSON.stringify({ keys: [{ key: 'sk-b', role: 'user', models: ['x'], limits: { weight: -1 } }] }));
      assert.equal((await source.identify('sk-a'))?.policy?.name, 'team-a');
      assert.equal(await source.identify('sk-b'), undefined);
      assert.equal(warnings.length, 2);
      assert.match(warnings[1], /keys\[0\] \(line 1\): `limits.weight` must be a positive number/);

      source.reload(); // SIGHUP: read again, and say again why it is not used
      assert.equal((await source.identify('sk-a'))?.policy?.name, 'team-a');
      assert.equal(warnings.length, 3);

      file.write(JSON.stringify({ keys: [{ key: 'sk-b', role: 'admin' }] }));
      assert.equal(await source.identify('sk-a'), undefined, 'a fixed file replaces the old keys');
      assert.equal((await source.identify('sk-b'))?.policy?.role, 'admin');
    });

    it('an unusable file at the first read fails closed, as an unreadable one does', async () => {
      warnings.length = 0;
      const file = memoryFile('{"keys": [{"key": "sk-a", "tier": "gold"}]}');
      const source = new ApiKeySource(['env-key'], '/keys', file.io);
      assert.equal(await source.identify('sk-a'), undefined);
      assert.ok(await source.matches('env-key'), 'LLAMAD_API_KEYS still work');
      assert.equal(warnings.length, 1);
      assert.match(warnings[0], /unknown field `tier`.*every keyed request is refused/);
      file.write(GOOD);
      assert.equal((await source.identify('sk-a'))?.name, 'team-a');
    });
  });
});
