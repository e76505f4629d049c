import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError, ModelLoadError, RequestCancelledError } from '../../../src/common/errors';
import { LoraLoader, LoraResidency } from '../../../src/runner/lora-residency';

/** A loader that records loads and unloads; `failing` paths reject, `busy` paths refuse to unload. */
class RecordingLoader implements LoraLoader {
  readonly log: string[] = [];
  readonly failing = new Set<string>();
  readonly busy = new Set<string>();

  async load(path: string): Promise<void> {
    await Promise.resolve();
    if (this.failing.has(path)) throw new ModelLoadError(`cannot load the LoRA adapter ${path}`);
    this.log.push(`load ${path}`);
  }

  async unload(path: string): Promise<'unloaded' | 'busy'> {
    await Promise.resolve();
    if (this.busy.has(path)) return 'busy';
    this.log.push(`unload ${path}`);
    return 'unloaded';
  }
}

const lora = (path: string, scale = 1) => ({ path, scale, name: `${path}:latest` });
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('LoraResidency', () => {
  it('loads each adapter once and keeps it resident while the bound allows', async () => {
    const loader = new RecordingLoader();
    const r = new LoraResidency(2, loader);
    const releases = await Promise.all([r.acquire([lora('a')]), r.acquire([lora('a')]), r.acquire([lora('b')])]);
    assert.deepEqual(loader.log, ['load a', 'load b']);
    assert.deepEqual(r.usage(), {
      max: 2,
      resident: ['a:latest', 'b:latest'],
      running: ['a:latest', 'b:latest'],
      waiting: [],
    });
    for (const release of releases) release();
    assert.deepEqual(r.usage().running, []);
    assert.deepEqual(r.usage().resident, ['a:latest', 'b:latest']);
  });

  it('unloads the least recently used idle adapter to make room', async () => {
    const loader = new RecordingLoader();
    const r = new LoraResidency(2, loader);
    (await r.acquire([lora('a')]))();
    (await r.acquire([lora('b')]))();
    (await r.acquire([lora('a')]))(); // a is now more recent than b
    (await r.acquire([lora('c')]))();
    assert.deepEqual(loader.log, ['load a', 'load b', 'unload b', 'load c']);
    assert.deepEqual(r.usage().resident.sort(), ['a:latest', 'c:latest']);
  });

  it('a set that does not fit beside busy adapters waits, first come first served, until one is idle', async () => {
    const loader = new RecordingLoader();
    let changes = 0;
    const r = new LoraResidency(1, loader, () => changes++);
    const releaseA = await r.acquire([lora('a')]);
    const order: string[] = [];
    const b = r.acquire([lora('b')]).then((release) => {
      order.push('b');
      return release;
    });
    const c = r.acquire([lora('c')]).then((release) => {
      order.push('c');
      return release;
    });
    await tick();
    assert.deepEqual(order, []);
    assert.deepEqual(r.usage().waiting, ['b:latest', 'c:latest']);
    assert.ok(changes >= 2);
    releaseA();
    (await b)();
    (await c)();
    assert.deepEqual(order, ['b', 'c']);
    assert.deepEqual(loader.log, ['load a', 'unload a', 'load b', 'unload b', 'load c']);
    assert.deepEqual(r.usage().waiting, []);
  });

  it('admits a whole set at once: two sets that each need both slots never deadlock', async () => {
    const loader = new RecordingLoader();
    const r = new LoraResidency(2, loader);
    const first = await r.acquire([lora('a'), lora('b')]);
    const pending = r.acquire([lora('c'), lora('d')]);
    await tick();
    // Nothing of c/d was loaded while a and b are busy (no half-admitted set holds a place).
    assert.deepEqual(r.usage().waiting.sort(), ['c:latest', 'd:latest']);
    assert.deepEqual(r.usage().resident.sort(), ['a:latest', 'b:latest']);
    first();
    (await pending)();
    assert.deepEqual(r.usage().resident.sort(), ['c:latest', 'd:latest']);
  });

  it('more distinct adapters than the bound is InvalidRequestError; zero scales and repeats do not count', async () => {
    const r = new LoraResidency(1, new RecordingLoader());
    await assert.rejects(r.acquire([lora('a'), lora('b')]), InvalidRequestError);
    (await r.acquire([lora('a'), lora('b', 0), lora('a', 0.5)]))();
    assert.deepEqual(r.usage().resident, ['a:latest']);
  });

  it('an abort while waiting rejects RequestCancelledError and leaves the queue', async () => {
    const r = new LoraResidency(1, new RecordingLoader());
    const release = await r.acquire([lora('a')]);
    const abort = new AbortController();
    const waiting = r.acquire([lora('b')], abort.signal);
    await tick();
    abort.abort();
    await assert.rejects(waiting, RequestCancelledError);
    assert.deepEqual(r.usage().waiting, []);
    release();
  });

  it('a failed load rejects its requests and leaves nothing resident; a busy unload keeps the adapter', async () => {
    const loader = new RecordingLoader();
    loader.failing.add('bad');
    const r = new LoraResidency(1, loader);
    await assert.rejects(r.acquire([lora('bad')]), ModelLoadError);
    assert.deepEqual(r.usage().resident, []);
    (await r.acquire([lora('a')]))();
    loader.busy.add('a');
    const b = r.acquire([lora('b')]);
    await tick();
    await tick();
    // 'a' could not be freed: it stays resident, and b loads beside it once the unload answered.
    (await b)();
    assert.deepEqual(r.usage().resident.sort(), ['a:latest', 'b:latest']);
  });
});
