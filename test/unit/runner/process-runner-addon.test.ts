import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { ModelLoadError } from '../../../src/common/errors';
import type { AddonCandidate } from '../../../src/native/addon-candidates';
import { ProcessRunner, RunnerSpec } from '../../../src/runner';
import { FakeBinding } from '../../utils/fake-binding';

const FAKE_CHILD = join(__dirname, '..', '..', 'utils', 'fake-runner-child.js');
const REAL_CHILD = join(__dirname, '..', '..', '..', 'src', 'runner', 'process', 'runner-child.js');
const binding = new FakeBinding();
const spec: RunnerSpec = { modelPath: '/m/good', numCtx: 64, numBatch: 32, numGpu: -1, numThread: 1, numParallel: 1 };
const dir = mkdtempSync(join(tmpdir(), 'llamad-runner-addon-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('ProcessRunner: the child loads the addon the daemon chose', () => {
  it('sends the addon path in the load message', async () => {
    const addon: AddonCandidate = {
      path: '/opt/chosen/build/cuda/Release/llamad.node',
      backend: 'cuda',
      origin: 'env',
    };
    const lines: string[] = [];
    const runner = await ProcessRunner.start(spec, {
      childPath: FAKE_CHILD,
      label: 'addon',
      binding: () => binding,
      addon,
      log: (line) => lines.push(line),
    });
    await runner.close();
    assert.ok(lines.includes(`fake-runner-child: addon ${addon.path}`), lines.join('\n'));
  });

  it('sends no addon when the daemon has none to pin (the child then searches itself)', async () => {
    const lines: string[] = [];
    const runner = await ProcessRunner.start(spec, {
      childPath: FAKE_CHILD,
      label: 'no-addon',
      binding: () => binding,
      log: (line) => lines.push(line),
    });
    await runner.close();
    assert.ok(!lines.some((line) => line.includes('fake-runner-child: addon')), lines.join('\n'));
  });

  it('fails the load with ModelLoadError when the chosen prebuilt package is of another llamad version', async () => {
    const root = join(dir, 'linux-x64');
    mkdirSync(join(root, 'bin'), { recursive: true });
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: '@llamad/linux-x64', version: '0.0.1-old' }));
    writeFileSync(join(root, 'bin', 'llamad.node'), 'not an addon');
    const path = join(root, 'bin', 'llamad.node');
    await assert.rejects(
      ProcessRunner.start(spec, {
        childPath: REAL_CHILD,
        label: 'old-addon',
        binding: () => binding,
        addon: { path, backend: 'cpu', origin: 'package', packageName: '@llamad/linux-x64' },
      }),
      (err: unknown) =>
        err instanceof ModelLoadError &&
        /@llamad\/linux-x64@0\.0\.1-old at .* does not match llamad \S+: install the matching one/.test(err.message),
    );
  });
});
