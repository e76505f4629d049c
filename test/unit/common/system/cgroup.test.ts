import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { oomKillCount, ownCgroupDirAsync } from '../../../../src/common/system';
// The start-up readers of the same files (src/config/host-memory.ts) are tested here too: they share the fake mount.
import { cgroupMemoryLimit, hostMemoryBytes, ownCgroupDirAtStartup } from '../../../../src/config/host-memory';

const GIB = 2 ** 30;

// A fake cgroup v2 mount and procfs in a temporary directory: these are plain files for the helpers.
describe('cgroup v2 helpers', () => {
  let base: string;
  let cgroupRoot: string;
  let procRoot: string;

  const write = (path: string, text: string) => {
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, text);
  };
  /** A cgroup directory under the mount, with its files. */
  const cgroup = (rel: string, files: Record<string, string> = {}) => {
    const dir = join(cgroupRoot, rel);
    write(join(dir, 'cgroup.procs'), '');
    for (const [name, text] of Object.entries(files)) write(join(dir, name), text);
    return dir;
  };
  const selfIn = (path: string) => write(join(procRoot, 'self', 'cgroup'), `0::${path}\n`);

  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'llamad-cgroup-'));
    cgroupRoot = join(base, 'cgroup');
    procRoot = join(base, 'proc');
    write(join(cgroupRoot, 'cgroup.controllers'), 'cpu memory pids\n');
  });

  afterEach(() => rmSync(base, { recursive: true, force: true }));

  it('finds the daemon cgroup from /proc/self/cgroup, the mount itself in a cgroup namespace (sync and async)', async () => {
    /** Both readers give the same directory. */
    const own = async () => {
      const sync = ownCgroupDirAtStartup({ cgroupRoot, procRoot });
      assert.equal(await ownCgroupDirAsync({ cgroupRoot, procRoot }), sync);
      return sync;
    };
    const dir = cgroup('system.slice/llamad.service');
    selfIn('/system.slice/llamad.service');
    assert.equal(await own(), dir);
    selfIn('/');
    assert.equal(await own(), cgroupRoot);
    selfIn('/not/visible/here');
    assert.equal(await own(), cgroupRoot, 'a path outside the mount falls back to it');
    selfIn('/../../etc');
    assert.equal(await own(), cgroupRoot);
    write(join(procRoot, 'self', 'cgroup'), '1:name=systemd:/x\n');
    assert.equal(await own(), cgroupRoot, 'no 0:: line (cgroup v1 only): the mount');
    rmSync(join(cgroupRoot, 'cgroup.controllers'));
    assert.equal(await own(), undefined, 'no cgroup v2 mounted');
  });

  it('takes the smallest memory.max of the cgroup and its ancestors; `max` is no limit', () => {
    cgroup('kubepods', { 'memory.max': `${16 * GIB}\n` });
    cgroup('kubepods/pod1', { 'memory.max': 'max\n' });
    cgroup('kubepods/pod1/ctr', { 'memory.max': `${10 * GIB}\n` });
    selfIn('/kubepods/pod1/ctr');
    assert.equal(cgroupMemoryLimit({ cgroupRoot, procRoot }), 10 * GIB);
    cgroup('kubepods/pod1/ctr', { 'memory.max': 'max\n' });
    assert.equal(cgroupMemoryLimit({ cgroupRoot, procRoot }), 16 * GIB, "the parent's limit applies");
    cgroup('kubepods', { 'memory.max': 'max\n' });
    assert.equal(cgroupMemoryLimit({ cgroupRoot, procRoot }), undefined);
  });

  it('hostMemoryBytes: the smaller of physical memory and the cgroup limit', () => {
    selfIn('/');
    write(join(cgroupRoot, 'memory.max'), `${10 * GIB}\n`);
    assert.equal(hostMemoryBytes({ cgroupRoot, procRoot, physical: 64 * GIB }), 10 * GIB);
    assert.equal(hostMemoryBytes({ cgroupRoot, procRoot, physical: 8 * GIB }), 8 * GIB);
    write(join(cgroupRoot, 'memory.max'), 'max\n');
    assert.equal(hostMemoryBytes({ cgroupRoot, procRoot, physical: 64 * GIB }), 64 * GIB);
    const none = join(base, 'nothing');
    assert.equal(hostMemoryBytes({ cgroupRoot: none, procRoot: none, physical: 3 * GIB }), 3 * GIB);
  });

  it('reads oom_kill from the cgroup memory.events, else from /proc/vmstat, else undefined', async () => {
    cgroup('svc', { 'memory.events': 'low 0\nhigh 12\nmax 40\noom 3\noom_kill 2\noom_group_kill 0\n' });
    selfIn('/svc');
    write(join(procRoot, 'vmstat'), 'nr_free_pages 1\noom_kill 9\n');
    assert.equal(await oomKillCount({ cgroupRoot, procRoot }), 2);
    assert.equal(
      await oomKillCount({ cgroupRoot, procRoot }, Promise.resolve(undefined)),
      9,
      'a directory resolved as "no cgroup v2" is not looked up again',
    );
    rmSync(join(cgroupRoot, 'svc', 'memory.events'));
    assert.equal(await oomKillCount({ cgroupRoot, procRoot }), 9, 'the whole machine without a memory.events');
    rmSync(join(procRoot, 'vmstat'));
    assert.equal(await oomKillCount({ cgroupRoot, procRoot }), undefined);
  });
});
