import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApiKeySource, KeysFileIo, parseKeysFile, presentedKeys } from '../../../src/security';

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
    const id = await source.identify('secret-key');
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
});
