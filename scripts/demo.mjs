#!/usr/bin/env node
// `npm run demo`: makes the small generated demo model (random weights, real qwen2 tokenizer and ChatML template),
// starts the daemon on OLLAMA_HOST (default 127.0.0.1:11434), registers the model as `demo` through POST /api/create,
// and keeps the daemon in the foreground until Ctrl-C. Needs `npm install` first (addon + compiled TypeScript).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const main = join(root, 'dist', 'src', 'main.js');
if (!existsSync(main)) {
  console.error('demo: dist/ is missing; run `npm install` (or `npm run build`) first');
  process.exit(1);
}

const gen = spawnSync(process.execPath, [join(root, 'dist', 'scripts', 'make-test-models.js')], { stdio: 'inherit' });
if (gen.status !== 0) process.exit(gen.status ?? 1);
const { TINY_QWEN2 } = await import(join(root, 'dist', 'test', 'utils', 'models.js'));

const hostEnv = process.env.OLLAMA_HOST ?? '127.0.0.1:11434';
const base = /^https?:\/\//.test(hostEnv)
  ? hostEnv.replace(/\/$/, '')
  : `http://${hostEnv.replace(/^0\.0\.0\.0/, '127.0.0.1')}`;
const daemon = spawn(process.execPath, [main], { stdio: 'inherit', env: process.env });
const stop = (sig) => daemon.kill(sig);
process.on('SIGINT', () => stop('SIGINT'));
process.on('SIGTERM', () => stop('SIGTERM'));
daemon.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));

async function waitUp() {
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`${base}/`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`daemon did not answer on ${base}`);
}

try {
  await waitUp();
  const r = await fetch(`${base}/api/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    // A modest num_predict so `llamad run demo` returns promptly: without one a random-weight model (which rarely
    // samples an end token) generates up to 10 × num_ctx tokens, as Ollama does.
    body: JSON.stringify({
      model: 'demo',
      modelfile: `FROM ${TINY_QWEN2}\nPARAMETER num_predict 128\n`,
      stream: false,
    }),
  });
  const body = await r.json();
  if (!r.ok || body.status !== 'success') throw new Error(`creating the demo model failed: ${JSON.stringify(body)}`);
  console.log(`\ndemo: model "demo" is ready (random weights: the text is gibberish, the mechanics are real). Try:
  curl ${base}/api/generate -d '{"model":"demo","prompt":"hi"}'
  curl ${base}/api/chat -d '{"model":"demo","messages":[{"role":"user","content":"hello"}],"stream":false}'
Ctrl-C stops the daemon.\n`);
} catch (err) {
  console.error(`demo: ${err.message}`);
  daemon.kill('SIGTERM');
  process.exitCode = 1;
}
