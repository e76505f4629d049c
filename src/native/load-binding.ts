import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { NativeBinding } from '../../binding';
import { REPO_ROOT } from '../config';

/** Backends looked for, in order, when LLAMAD_ADDON does not name a file. */
const BACKENDS = ['cuda', 'vulkan', 'metal', 'cpu'];

/**
 * Finds the compiled addon: $LLAMAD_ADDON if set, else build/<backend>/Release/llamad.node for the first backend
 * that was built (cuda, vulkan, metal, cpu). Returns null when none exists.
 */
export function findAddonPath(): string | null {
  const explicit = process.env.LLAMAD_ADDON;
  if (explicit) return existsSync(explicit) ? resolve(explicit) : null;
  for (const backend of BACKENDS) {
    const p = join(REPO_ROOT, 'build', backend, 'Release', 'llamad.node');
    if (existsSync(p)) return p;
  }
  return null;
}

/**
 * Finds the vendored llama.cpp `rpc-server` (built by `npm run build:native` next to the addon): $LLAMAD_RPC_SERVER
 * if set, else `rpc-server` in the folder of the addon that findAddonPath() picks, else in build/<backend>/Release for
 * the first backend that has one. Returns null when none exists.
 */
export function findRpcServerPath(): string | null {
  const name = process.platform === 'win32' ? 'rpc-server.exe' : 'rpc-server';
  const explicit = process.env.LLAMAD_RPC_SERVER;
  if (explicit) return existsSync(explicit) ? resolve(explicit) : null;
  const addon = findAddonPath();
  const candidates = [
    ...(addon ? [join(dirname(addon), name)] : []),
    ...BACKENDS.map((backend) => join(REPO_ROOT, 'build', backend, 'Release', name)),
  ];
  return candidates.find((p) => existsSync(p)) ?? null;
}

let cached: NativeBinding | undefined;

/**
 * Loads the native addon once per process (the raw binding described by binding.d.ts).
 * @throws Error with a message that says how to build the addon when it is missing or fails to load.
 */
export function loadBinding(): NativeBinding {
  if (cached) return cached;
  const path = findAddonPath();
  if (!path) {
    throw new Error(
      'native addon not found: build it with `npm run build:native` (or `npm install`); ' +
        'set LLAMAD_ADDON to the path of a llamad.node built elsewhere',
    );
  }
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    cached = require(path) as NativeBinding;
  } catch (err) {
    throw new Error(
      `native addon at ${path} failed to load: ${(err as Error).message}; rebuild it with \`npm run build:native\``,
    );
  }
  return cached;
}

/**
 * Whether `binding` is the compiled addon that loadBinding() loaded in this process (not a stand-in such as a test
 * FakeBinding): only the compiled addon can be loaded again in a runner process.
 */
export function isCompiledAddon(binding: unknown): boolean {
  return cached !== undefined && binding === cached;
}
