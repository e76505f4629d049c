import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../config';
import { CliError } from './errors';

/** Options of `llamad build`. */
export interface BuildOptions {
  /** cpu (default), cuda, vulkan or metal: LLAMAD_BACKEND of scripts/build-native.mjs. */
  backend?: string;
}

/**
 * `llamad build`: compiles the native addon from source inside the installed package (the fallback when no prebuilt
 * package fits this machine, and what `npm install` does in a checkout): fetches the pinned llama.cpp
 * (scripts/fetch-llama-cpp.mjs, from the npm registry) and builds it with the addon through cmake-js
 * (scripts/build-native.mjs) into build/<backend>/Release, where the loader finds it before any prebuilt package.
 * Needs cmake and a C++17 compiler (and the GPU tool chain for cuda/vulkan). Output goes to the terminal.
 * @throws CliError when a step fails (its own output says why).
 */
export function buildCommand(o: BuildOptions): void {
  const env = { ...process.env, ...(o.backend ? { LLAMAD_BACKEND: o.backend } : {}) };
  for (const script of ['fetch-llama-cpp.mjs', 'build-native.mjs']) {
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', script)], {
      cwd: REPO_ROOT,
      env,
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new CliError(`build failed in ${script} (exit ${String(r.status ?? r.signal)})`);
  }
}
