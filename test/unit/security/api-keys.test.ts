import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApiKeySource, parseKeysFile, presentedKeys } from '../../../src/security';

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
});
