import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import {
  crashCause,
  OomKillCounter,
  ProcessRunner,
  ProcessRunnerFactory,
  RunnerDeath,
  RunnerSpec,
} from '../../../src/runner';
import { FakeBinding } from '../../utils/fake-binding';

const CHILD = join(__dirname, '..', '..', 'utils', 'fake-runner-child.js');

describe('OomKillCounter', () => {
  it('a SIGKILLed runner is an OOM kill when the counter rose since it started', async () => {
    let count = 4;
    const oom = new OomKillCounter(() => Promise.resolve(count));
    const before = await oom.mark();
    assert.equal(before, 4);
    assert.equal(await oom.claim(before), false, 'no rise: a kill -9');
    count = 5;
    assert.equal(await oom.claim(before), true);
    assert.equal(await oom.claim(before), false, 'that kill is claimed: another SIGKILL is not an OOM kill');
  });

  it('two runners OOM-killed together claim one kill each; a later runner does not inherit them', async () => {
    let count = 0;
    const oom = new OomKillCounter(() => Promise.resolve(count));
    const a = await oom.mark();
    const b = await oom.mark();
    count = 2;
    const c = await oom.mark();
    // Both deaths are claimed concurrently (their reads overlap): still one kill each.
    assert.deepEqual(await Promise.all([oom.claim(a), oom.claim(b)]), [true, true]);
    assert.equal(await oom.claim(c), false, 'started after both kills');
    count = 3;
    assert.equal(await oom.claim(c), true);
  });

  it('an unknown counter (no cgroup v2, no /proc/vmstat) never classifies as OOM', async () => {
    let count: number | undefined;
    const oom = new OomKillCounter(() => Promise.resolve(count));
    const before = await oom.mark();
    count = 7;
    assert.equal(await oom.claim(before), false);
    assert.equal(await oom.claim(3), true, 'known before and after');
    count = undefined;
    assert.equal(await oom.claim(3), false);
  });

  it('at(): resolves the cgroup directory once, then reads only memory.events (asynchronously)', async () => {
    const base = mkdtempSync(join(tmpdir(), 'llamad-oom-at-'));
    try {
      const cgroupRoot = join(base, 'cgroup');
      mkdirSync(join(cgroupRoot, 'a'), { recursive: true });
      mkdirSync(join(base, 'proc', 'self'), { recursive: true });
      writeFileSync(join(cgroupRoot, 'cgroup.controllers'), 'memory\n');
      writeFileSync(join(cgroupRoot, 'a', 'cgroup.procs'), '');
      writeFileSync(join(cgroupRoot, 'a', 'memory.events'), 'oom_kill 1\n');
      writeFileSync(join(base, 'proc', 'self', 'cgroup'), '0::/a\n');
      const oom = OomKillCounter.at({ cgroupRoot, procRoot: join(base, 'proc') });
      const before = await oom.mark();
      assert.equal(before, 1);
      // The daemon does not move between cgroups: a changed /proc/self/cgroup is not read again.
      writeFileSync(join(base, 'proc', 'self', 'cgroup'), '0::/elsewhere\n');
      writeFileSync(join(cgroupRoot, 'a', 'memory.events'), 'oom_kill 2\n');
      assert.equal(await oom.claim(before), true);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('crashCause: oom for an OOM-killed SIGKILL only', () => {
    assert.equal(crashCause(null, 'SIGKILL', [], true), 'oom');
    assert.equal(crashCause(null, 'SIGKILL', [], false), 'signal');
    assert.equal(crashCause(null, 'SIGABRT', [], true), 'abort', 'only a SIGKILL is the OOM killer');
    assert.equal(crashCause(1, null, [], true), 'exit');
  });
});

// The real runner-process path against a fake child, with a fake cgroup v2 mount whose memory.events the test writes:
// the kernel's OOM kill is a SIGKILL plus a rise of oom_kill.
describe('ProcessRunnerFactory: runner deaths by the OOM killer', () => {
  let base: string;
  let events: string;
  const spec = (modelPath: string): RunnerSpec => ({
    modelPath,
    numCtx: 64,
    numBatch: 32,
    numGpu: -1,
    numThread: 1,
    numParallel: 1,
  });
  const setOomKills = (n: number) => writeFileSync(events, `low 0\nhigh 0\nmax 9\noom 1\noom_kill ${n}\n`);

  beforeEach(() => {
    Logger.overrideLogger(false);
    base = mkdtempSync(join(tmpdir(), 'llamad-oom-'));
    const cgroupRoot = join(base, 'cgroup');
    mkdirSync(join(cgroupRoot, 'llamad'), { recursive: true });
    mkdirSync(join(base, 'proc', 'self'), { recursive: true });
    writeFileSync(join(cgroupRoot, 'cgroup.controllers'), 'memory\n');
    writeFileSync(join(cgroupRoot, 'llamad', 'cgroup.procs'), '');
    writeFileSync(join(base, 'proc', 'self', 'cgroup'), '0::/llamad\n');
    events = join(cgroupRoot, 'llamad', 'memory.events');
    setOomKills(0);
  });

  afterEach(() => rmSync(base, { recursive: true, force: true }));

  const factory = () =>
    new ProcessRunnerFactory(() => new FakeBinding(), {
      childPath: CHILD,
      cgroup: { cgroupRoot: join(base, 'cgroup'), procRoot: join(base, 'proc') },
    });

  const deathOf = async (oomKill: boolean): Promise<RunnerDeath> => {
    const runner = (await factory().create(spec('/m/good'))) as ProcessRunner;
    const death = new Promise<RunnerDeath>((resolve) => runner.onDeath(resolve));
    if (oomKill) setOomKills(1);
    process.kill(runner.pid!, 'SIGKILL');
    return death;
  };

  it('a SIGKILL while oom_kill rose is cause `oom`', async () => {
    assert.deepEqual(await deathOf(true), { reason: 'signal: killed', cause: 'oom' });
  });

  it('a SIGKILL without a rise (kill -9) stays cause `signal`', async () => {
    assert.deepEqual(await deathOf(false), { reason: 'signal: killed', cause: 'signal' });
  });
});
