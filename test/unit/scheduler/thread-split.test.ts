import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ThreadBalancer, ThreadHolder } from '../../../src/scheduler/thread-split';
import { FakeRunner, spec } from '../../utils/fake-runner';

/** A fake runner that records its setThreads calls. */
class ThreadedRunner extends FakeRunner {
  readonly threadCalls: number[] = [];
  setThreads(threads: number): void {
    this.threadCalls.push(threads);
  }
}

function holder(refCount: number, numThread = 0): ThreadHolder & { runner: ThreadedRunner } {
  return { refCount, runner: new ThreadedRunner(spec({ numThread })) };
}

describe('ThreadBalancer', () => {
  it('gives a lone busy runner every core, and two busy runners half each', () => {
    const balancer = new ThreadBalancer(8);
    const a = holder(1);
    const b = holder(0);
    balancer.rebalance([a, b]);
    assert.deepEqual(a.runner.threadCalls, [8]);
    assert.deepEqual(b.runner.threadCalls, [], 'an idle runner is left alone');
    b.refCount = 1;
    balancer.rebalance([a, b]);
    assert.deepEqual(a.runner.threadCalls, [8, 4]);
    assert.deepEqual(b.runner.threadCalls, [4]);
    // b idle again: a gets everything back; an unchanged share sends nothing.
    b.refCount = 0;
    balancer.rebalance([a, b]);
    balancer.rebalance([a, b]);
    assert.deepEqual(a.runner.threadCalls, [8, 4, 8]);
    assert.deepEqual(b.runner.threadCalls, [4]);
  });

  it('loads a new runner with the share it will have among the busy ones', () => {
    const balancer = new ThreadBalancer(8);
    assert.equal(balancer.forLoad([]), 8);
    assert.equal(balancer.forLoad([holder(1), holder(0)]), 4);
    assert.equal(balancer.forLoad([holder(2), holder(1)]), 2);
    const fresh = holder(1);
    balancer.loaded(fresh.runner, 8);
    balancer.rebalance([fresh]);
    assert.deepEqual(fresh.runner.threadCalls, [], 'already loaded with its share');
  });

  it('never sets the threads of a runner with an explicit num_thread, which still counts as decoding', () => {
    const balancer = new ThreadBalancer(8);
    const fixed = holder(1, 6);
    const auto = holder(1);
    balancer.rebalance([fixed, auto]);
    assert.deepEqual(fixed.runner.threadCalls, []);
    assert.deepEqual(auto.runner.threadCalls, [4]);
  });

  it('skips runners without setThreads', () => {
    const balancer = new ThreadBalancer(4);
    const plain = { refCount: 1, runner: new FakeRunner(spec()) };
    assert.doesNotThrow(() => balancer.rebalance([plain]));
  });
});
