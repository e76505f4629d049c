import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { physicalCores, splitThreads, SysfsReader } from '../../../src/runner/cpu-threads';

/** A sysfs of `files` (path → content); listing returns the direct children of a folder. */
function fakeSysfs(files: Record<string, string>): SysfsReader {
  return {
    list(path) {
      const names = new Set<string>();
      for (const file of Object.keys(files)) {
        if (file.startsWith(`${path}/`)) names.add(file.slice(path.length + 1).split('/')[0]);
      }
      if (names.size === 0) throw new Error(`ENOENT: ${path}`);
      return [...names];
    },
    read(path) {
      if (!(path in files)) throw new Error(`ENOENT: ${path}`);
      return files[path];
    },
  };
}

/** sysfs entries of logical CPU `cpu` on core `core` of package `pkg`, with its siblings list. */
function cpu(n: number, core: number, pkg: number, siblings: string, online?: string): Record<string, string> {
  const base = `/sys/devices/system/cpu/cpu${n}`;
  return {
    [`${base}/topology/core_id`]: String(core),
    [`${base}/topology/physical_package_id`]: String(pkg),
    [`${base}/topology/thread_siblings_list`]: siblings,
    ...(online !== undefined ? { [`${base}/online`]: online } : {}),
  };
}

describe('physicalCores', () => {
  it('counts hyper-threads of one core once (4 cores × 2 threads → 4)', () => {
    const sys = fakeSysfs({
      ...cpu(0, 0, 0, '0,4'),
      ...cpu(1, 1, 0, '1,5'),
      ...cpu(2, 2, 0, '2,6'),
      ...cpu(3, 3, 0, '3,7'),
      ...cpu(4, 0, 0, '0,4'),
      ...cpu(5, 1, 0, '1,5'),
      ...cpu(6, 2, 0, '2,6'),
      ...cpu(7, 3, 0, '3,7'),
      '/sys/devices/system/cpu/possible': '0-7',
    });
    assert.equal(physicalCores(sys, 8), 4);
  });

  it('tells cores of two packages apart (same core_id, other physical_package_id)', () => {
    const sys = fakeSysfs({ ...cpu(0, 0, 0, '0'), ...cpu(1, 0, 1, '1'), ...cpu(2, 1, 0, '2'), ...cpu(3, 1, 1, '3') });
    assert.equal(physicalCores(sys, 4), 4);
  });

  it('skips offline CPUs', () => {
    const sys = fakeSysfs({ ...cpu(0, 0, 0, '0'), ...cpu(1, 1, 0, '1', '1'), ...cpu(2, 2, 0, '2', '0') });
    assert.equal(physicalCores(sys, 3), 2);
  });

  it('falls back to the siblings lists without core ids, and to the logical count without sysfs', () => {
    const sys = fakeSysfs({
      '/sys/devices/system/cpu/cpu0/topology/thread_siblings_list': '0-1',
      '/sys/devices/system/cpu/cpu1/topology/thread_siblings_list': '0-1',
      '/sys/devices/system/cpu/cpu2/topology/thread_siblings_list': '2-3',
      '/sys/devices/system/cpu/cpu3/topology/thread_siblings_list': '2-3',
    });
    assert.equal(physicalCores(sys, 4), 2);
    assert.equal(physicalCores(fakeSysfs({}), 6), 6);
  });

  it('never exceeds the logical CPUs the process may use, and is at least 1', () => {
    const sys = fakeSysfs({ ...cpu(0, 0, 0, '0'), ...cpu(1, 1, 0, '1'), ...cpu(2, 2, 0, '2'), ...cpu(3, 3, 0, '3') });
    assert.equal(physicalCores(sys, 2), 2);
    assert.equal(physicalCores(fakeSysfs({}), 0), 1);
  });

  it('reads the real machine without throwing', () => {
    const n = physicalCores();
    assert.ok(Number.isInteger(n) && n >= 1);
  });
});

describe('splitThreads', () => {
  it('gives one context everything and splits evenly, the remainder to the first ones', () => {
    assert.deepEqual(splitThreads(8, 1), [8]);
    assert.deepEqual(splitThreads(8, 2), [4, 4]);
    assert.deepEqual(splitThreads(8, 3), [3, 3, 2]);
  });

  it('keeps at least one thread per context and treats fewer than one part as one', () => {
    assert.deepEqual(splitThreads(2, 3), [1, 1, 1]);
    assert.deepEqual(splitThreads(6, 0), [6]);
  });
});
