import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import type { NativeBinding } from '../../binding';
import { ModelLoadError } from '../common/errors';
import { REPO_ROOT } from '../config';
import {
  type AddonCandidate,
  addonVersionMismatch,
  chooseAddon,
  llamadVersion,
  missingAddonMessage,
  processAddonHost,
} from './addon-candidates';
import { addonIdentityMismatch, LLAMAD_ADDON_ABI } from './addon-identity';

/**
 * The addon this process loads (docs/library.md "Prebuilt addons"): $LLAMAD_ADDON if set, else the best usable of
 * a from-source build (build/<backend>/Release), a prebuilt layout built here (build/prebuilt-<backend>/bin) and the installed
 * prebuilt package (`@llamad/<platform>-<arch>[-<backend>]`), trying CUDA, Vulkan, Metal, then the CPU;
 * `LLAMAD_BACKEND` keeps one backend. Returns null when none exists.
 * @throws Error when LLAMAD_BACKEND names no known backend
 */
export function findAddon(): AddonCandidate | null {
  return chooseAddon(processAddonHost(REPO_ROOT));
}

/** The path of the addon findAddon() picks, or null. */
export function findAddonPath(): string | null {
  return findAddon()?.path ?? null;
}

/**
 * Finds the vendored llama.cpp `rpc-server` (built next to the addon; a prebuilt package carries it in bin/):
 * $LLAMAD_RPC_SERVER if set, else `rpc-server` in the folder of the addon that findAddonPath() picks. Returns null
 * when none exists.
 */
export function findRpcServerPath(): string | null {
  const name = process.platform === 'win32' ? 'rpc-server.exe' : 'rpc-server';
  const explicit = process.env.LLAMAD_RPC_SERVER;
  if (explicit) return existsSync(explicit) ? explicit : null;
  const addon = findAddonPath();
  const path = addon ? join(dirname(addon), name) : undefined;
  return path && existsSync(path) ? path : null;
}

let cached: NativeBinding | undefined;
let loaded: AddonCandidate | undefined;

/**
 * Loads the native addon once per process (the raw binding described by binding.d.ts): `addon` when given (exactly
 * that file, no search: a runner process loads the addon its daemon chose, ProcessRunnerOptions.addon), else the one
 * findAddon() picks. Later calls return the addon loaded first.
 * @throws ModelLoadError naming both versions and the fix when a prebuilt package's version is not llamad's
 *   (addonVersionMismatch, before loading it), or when the loaded addon's exported `version` / `abi` are not this
 *   JavaScript's package.json version and LLAMAD_ADDON_ABI (addonIdentityMismatch; docs/native.md "Version and
 *   ABI"); Error with one line that says what to install or build when no addon is found, or why it
 *   failed to load.
 */
export function loadBinding(addon?: AddonCandidate): NativeBinding {
  if (cached) return cached;
  const host = processAddonHost(REPO_ROOT);
  const chosen = addon ?? findAddon();
  if (!chosen) throw new Error(missingAddonMessage(host));
  const mismatch = addonVersionMismatch(host, chosen);
  if (mismatch) throw new ModelLoadError(mismatch);
  let binding: NativeBinding;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    binding = require(chosen.path) as NativeBinding;
  } catch (err) {
    const fix =
      chosen.origin === 'package'
        ? `reinstall ${chosen.packageName}, or build from source with \`npx llamad build\``
        : 'rebuild it with `npx llamad build` (`npm run build:native` in a checkout)';
    throw new Error(`native addon at ${chosen.path} failed to load: ${(err as Error).message}; ${fix}`);
  }
  // Not cached when it does not match: every later call throws the same (require() returns the same exports).
  const wrong = addonIdentityMismatch(chosen, binding as Partial<NativeBinding>, {
    version: llamadVersion(host),
    abi: LLAMAD_ADDON_ABI,
  });
  if (wrong) throw new ModelLoadError(wrong);
  cached = binding;
  loaded = chosen;
  return cached;
}

/** The addon loadBinding() loaded in this process (path, backend, origin), undefined before it ran. */
export function loadedAddon(): AddonCandidate | undefined {
  return loaded;
}

/**
 * Whether `binding` is the compiled addon that loadBinding() loaded in this process (not a stand-in such as a test
 * FakeBinding): only the compiled addon can be loaded again in a runner process.
 */
export function isCompiledAddon(binding: unknown): boolean {
  return cached !== undefined && binding === cached;
}
