#!/usr/bin/env node
// Checks the Vulkan addon against the CPU addon: the same prompt, 32 greedy tokens, all layers on the Vulkan device
// (nGpuLayers 999) in one and none in the other, for each tiny test model. Prints both token lists, whether they are
// identical, and the timings; exits 1 on a mismatch, 2 when an addon or model is missing.
//
// Each addon runs in its own child process (two ggml copies in one process would share nothing but could clash).
// On a machine without a GPU, Mesa's lavapipe (mesa-vulkan-drivers) is the Vulkan device; pin it with
// VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.x86_64.json. ggml skips Vulkan devices of type CPU (lavapipe) unless
// GGML_VK_VISIBLE_DEVICES names them, so the Vulkan child gets GGML_VK_VISIBLE_DEVICES=0 unless it is set. The check
// fails (exit 2) when the Vulkan addon reports no Vulkan device. See docs/native.md, "Vulkan on lavapipe".
//
// Usage: node scripts/vulkan-check.mjs   (npm run check:vulkan)
// Env: LLAMAD_CPU_ADDON / LLAMAD_VULKAN_ADDON override build/{cpu,vulkan}/Release/llamad.node.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const MODELS = ['tiny-llama-spm.gguf', 'tiny-qwen2.gguf'].map((m) => join(root, 'test', 'fixtures', 'models', m));
const PROMPT = 'The quick brown fox jumps over the lazy dog. Once upon a time';
const N_PREDICT = 32;
const GREEDY = {
  temperature: 0,
  topK: 0,
  topP: 1,
  minP: 0,
  typicalP: 1,
  repeatPenalty: 1,
  repeatLastN: 64,
  presencePenalty: 0,
  frequencyPenalty: 0,
  seed: -1,
};

/** Child: loads one addon, generates greedily on one model and prints a JSON line. */
async function child(addonPath, modelPath, nGpuLayers) {
  const binding = createRequire(import.meta.url)(addonPath);
  const t0 = performance.now();
  const model = new binding.Model(modelPath, { nGpuLayers });
  await model.load();
  const loadMs = performance.now() - t0;
  const ctx = new binding.Context(model, { nCtx: 256, nThreads: 2 });
  const prompt = model.tokenize(PROMPT, true, false);
  const tokens = [];
  // Two top alternatives per step: when the outputs differ, they show whether the first difference is a near-tie.
  const top = [];
  const done = await new Promise((resolveDone, reject) => {
    ctx.submit({ tokens: prompt, nPredict: N_PREDICT, sampling: GREEDY, ignoreEos: true, logprobs: 2 }, (e) => {
      if (e.type === 'token') {
        tokens.push(e.token);
        top.push(e.topLogprobs.map((t) => [t.token, Number(t.logprob.toFixed(5))]));
      } else if (e.type === 'done') resolveDone(e);
      else reject(new Error(`${e.code}: ${e.message}`));
    });
  });
  await ctx.dispose();
  await model.dispose();
  const t = done.timings;
  console.log(
    JSON.stringify({
      devices: binding.devices(),
      tokens,
      top,
      loadMs: Math.round(loadMs),
      promptMs: Math.round(t.promptNs / 1e6),
      genMs: Math.round(t.predictedNs / 1e6),
      tokPerS: Number(((t.predictedN * 1e9) / Math.max(1, t.predictedNs)).toFixed(1)),
    }),
  );
}

function run(addonPath, modelPath, nGpuLayers, env = process.env) {
  const r = spawnSync(
    process.execPath,
    [fileURLToPath(import.meta.url), '--child', addonPath, modelPath, String(nGpuLayers)],
    { encoding: 'utf8', maxBuffer: 1 << 26, env },
  );
  const line = r.stdout.trim().split('\n').pop();
  if (r.status !== 0 || !line?.startsWith('{')) {
    throw new Error(`${addonPath} on ${modelPath} failed (exit ${r.status}):\n${r.stderr}${r.stdout}`);
  }
  return JSON.parse(line);
}

async function main() {
  const cpuAddon = process.env.LLAMAD_CPU_ADDON ?? join(root, 'build', 'cpu', 'Release', 'llamad.node');
  const vkAddon = process.env.LLAMAD_VULKAN_ADDON ?? join(root, 'build', 'vulkan', 'Release', 'llamad.node');
  for (const p of [cpuAddon, vkAddon, ...MODELS]) {
    if (!existsSync(p)) {
      console.error(
        `vulkan-check: missing ${p} (build: node scripts/build-native.mjs, LLAMAD_BACKEND=vulkan for Vulkan)`,
      );
      process.exit(2);
    }
  }
  let mismatches = 0;
  for (const modelPath of MODELS) {
    const cpu = run(cpuAddon, modelPath, 0);
    const vk = run(vkAddon, modelPath, 999, { GGML_VK_VISIBLE_DEVICES: '0', ...process.env });
    if (!vk.devices.some((d) => d.startsWith('Vulkan'))) {
      console.error(`vulkan-check: the Vulkan addon found no Vulkan device (devices: ${vk.devices.join(', ')})`);
      process.exit(2);
    }
    const same = cpu.tokens.length === vk.tokens.length && cpu.tokens.every((t, i) => t === vk.tokens[i]);
    const name = modelPath.split('/').pop();
    console.log(`== ${name}: ${same ? 'IDENTICAL' : 'MISMATCH'} (${N_PREDICT} tokens, temperature 0)`);
    for (const [label, r] of [
      ['cpu   ', cpu],
      ['vulkan', vk],
    ]) {
      console.log(
        `  ${label} devices=${r.devices.join(',')} load ${r.loadMs} ms, prompt ${r.promptMs} ms, ` +
          `generate ${r.genMs} ms (${r.tokPerS} tok/s)`,
      );
      console.log(`  ${label} tokens ${r.tokens.join(' ')}`);
    }
    // How far the sampled tokens' log-probabilities drift between the backends, even when the tokens agree.
    const drift = Math.max(
      ...cpu.top.map((t, i) => (vk.top[i] && t[0][0] === vk.top[i][0][0] ? Math.abs(t[0][1] - vk.top[i][0][1]) : 0)),
    );
    console.log(`  max |logprob(cpu) - logprob(vulkan)| of the top token: ${drift.toFixed(5)}`);
    if (!same) {
      mismatches++;
      const i = cpu.tokens.findIndex((t, k) => t !== vk.tokens[k]);
      console.log(`  first difference at position ${i}: cpu ${cpu.tokens[i]} vs vulkan ${vk.tokens[i]}`);
      console.log(
        `  top-2 [token, logprob] there: cpu ${JSON.stringify(cpu.top[i])} vulkan ${JSON.stringify(vk.top[i])}`,
      );
    }
  }
  console.log(mismatches === 0 ? 'vulkan-check: identical' : `vulkan-check: ${mismatches} model(s) differ`);
  process.exit(mismatches === 0 ? 0 : 1);
}

if (process.argv[2] === '--child') {
  await child(process.argv[3], process.argv[4], Number(process.argv[5]));
} else {
  await main();
}
