/**
 * A runner process over FakeBinding (no addon, no model): the real child code (serveRunner) with scripted
 * behaviour chosen by words in the model path:
 * - `abort-on-load`: writes a GGML_ASSERT line to stderr and aborts while loading;
 * - `abort-on-decode`: the same on the first generation;
 * - `exit-3-on-decode`: exits with status 3 (no stderr) on the first generation;
 * - `slow`: 200 pieces, 20 ms apart (a stream to kill in the middle); a cancelled task frees its slot 50 ms later
 *   (as the engine does at its next decode step);
 * - `slow-embed`: embed() takes 5 s (to cancel it);
 * - `invalid`: generations fail with LLAMA_INVALID_ARGUMENT `bad sampler`;
 * - `cpu-probe-amx`: writes ggml's CPU probe line for AMX (vendor/patches/0002) to stderr while loading.
 * LLAMAD_TEST_RUNNER_SIGILL (runner-child.ts) works here too: the SIGILL comes after the fake load.
 * The addon of the load message (ProcessRunnerOptions.addon) is not loaded: its path is written to stderr as
 * `fake-runner-child: addon <path>` (what the daemon sent reaches the child).
 * Started by ProcessRunner with `childPath` pointing at dist/test/utils/fake-runner-child.js.
 */
import type { NativeModelParams } from '../../binding';
import { serveRunner } from '../../src/runner/process/runner-child';
import { FakeBinding } from './fake-binding';

function die(how: 'abort' | 'exit'): never {
  if (how === 'exit') process.exit(3);
  process.stderr.write('/src/ggml/src/ggml.c:2907: GGML_ASSERT(ggml_can_mul_mat(k, q)) failed\n');
  process.stderr.write('[New LWP 12345]\n#0  0x00007f in __GI___wait4 () at wait4.c:30\n\n');
  process.abort();
}

const binding = new FakeBinding();
let path = '';
const Base = binding.Model;
(binding as { Model: FakeBinding['Model'] }).Model = class extends Base {
  constructor(modelPath: string, params?: NativeModelParams) {
    super(modelPath, params);
    path = modelPath;
    if (path.includes('abort-on-load')) {
      binding.loadDelayMs = 1000;
      setTimeout(() => die('abort'), 10);
    }
    if (path.includes('slow-embed')) binding.embedDelayMs = 5000;
    else if (path.includes('slow')) binding.cancelDelayMs = 50;
    if (path.includes('cpu-probe-amx')) {
      process.stderr.write('cpu: AMX advertised by CPUID but its first instruction traps (SIGILL): AMX disabled\n');
    }
  }
};
binding.poolingType = process.argv.includes('--embedding') ? 1 : undefined;
binding.script = () => {
  if (path.includes('abort-on-decode')) die('abort');
  if (path.includes('exit-3-on-decode')) die('exit');
  if (path.includes('invalid')) {
    return { pieces: [], error: { code: 'LLAMA_INVALID_ARGUMENT', message: 'bad sampler' } };
  }
  if (path.includes('slow')) return { pieces: Array.from({ length: 200 }, (_, i) => `t${i} `), delayMs: 20 };
  return { pieces: ['Hello', ',', ' world'] };
};

serveRunner((addon) => {
  if (addon) process.stderr.write(`fake-runner-child: addon ${addon.path}\n`);
  return binding;
});
