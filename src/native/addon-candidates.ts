import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';

/** The ggml backends an addon can be built for, in the order the loader prefers them when several are usable. */
export const ADDON_BACKENDS = ['cuda', 'vulkan', 'metal', 'cpu'] as const;
export type AddonBackend = (typeof ADDON_BACKENDS)[number];

/** Where an addon candidate comes from. */
export type AddonOrigin = 'env' | 'source-build' | 'prebuilt-build' | 'package';

/** One llamad.node the loader may load, with what it was built for. */
export interface AddonCandidate {
  /** Absolute path of llamad.node. */
  path: string;
  backend: AddonBackend;
  origin: AddonOrigin;
  /** The prebuilt package's name (origin 'package'), e.g. `@llamad/linux-x64`. */
  packageName?: string;
}

/** What the candidate search reads from the process (a seam for tests). */
export interface AddonHost {
  platform: NodeJS.Platform;
  arch: string;
  env: NodeJS.ProcessEnv;
  /** The package root (the checkout, or node_modules/llamad in a host): build/ and package resolution start here. */
  root: string;
  exists(path: string): boolean;
  /** The folder of package `name` as `require` resolves it from `root`, undefined when it is not installed. */
  resolvePackage(name: string): string | undefined;
  /** The text of the file at `path` (UTF-8), undefined when it cannot be read. */
  readText(path: string): string | undefined;
}

/** The real process: REPO_ROOT-relative builds and packages resolved like `require` does from the package root. */
export function processAddonHost(root: string): AddonHost {
  const req = createRequire(join(root, 'package.json'));
  return {
    platform: process.platform,
    arch: process.arch,
    env: process.env,
    root,
    exists: existsSync,
    readText(path: string): string | undefined {
      try {
        return readFileSync(path, 'utf8');
      } catch {
        return undefined;
      }
    },
    resolvePackage(name: string): string | undefined {
      try {
        return dirname(req.resolve(`${name}/package.json`));
      } catch {
        return undefined;
      }
    },
  };
}

/**
 * The npm package that carries the prebuilt addon of `backend` for this platform: `@llamad/<platform>-<arch>` for
 * the CPU (on macOS, Metal: the CPU backend is part of it), else `@llamad/<platform>-<arch>-<backend>`
 * (scripts/pack-prebuilt.mjs writes them; docs/library.md "Prebuilt addons").
 */
export function prebuiltPackageName(platform: string, arch: string, backend: AddonBackend): string {
  const base = `@llamad/${platform}-${arch}`;
  return backend === 'cpu' || (platform === 'darwin' && backend === 'metal') ? base : `${base}-${backend}`;
}

const LINUX_LIB_DIRS = [
  '/usr/lib/x86_64-linux-gnu',
  '/usr/lib/aarch64-linux-gnu',
  '/usr/lib64',
  '/usr/lib',
  '/lib/x86_64-linux-gnu',
  '/lib/aarch64-linux-gnu',
  '/lib64',
  '/usr/local/lib',
];

/** Whether a shared library file `name` is in one of the usual Linux library folders or LD_LIBRARY_PATH. */
function hasLinuxLibrary(host: AddonHost, name: string): boolean {
  const extra = (host.env.LD_LIBRARY_PATH ?? '').split(':').filter(Boolean);
  return [...extra, ...LINUX_LIB_DIRS].some((dir) => host.exists(join(dir, name)));
}

/**
 * Whether this machine can run `backend`: CUDA needs NVIDIA's driver (its kernel module on Linux, nvcuda.dll on
 * Windows), Vulkan a Vulkan loader (libvulkan.so.1 / vulkan-1.dll), Metal macOS; the CPU always works. A candidate
 * whose backend cannot run is passed over unless LLAMAD_BACKEND names it.
 */
export function backendUsable(host: AddonHost, backend: AddonBackend): boolean {
  const system32 = join(host.env.SystemRoot ?? 'C:\\Windows', 'System32');
  switch (backend) {
    case 'cpu':
      return true;
    case 'metal':
      return host.platform === 'darwin';
    case 'cuda':
      if (host.platform === 'win32') return host.exists(join(system32, 'nvcuda.dll'));
      return (
        host.platform === 'linux' &&
        (host.exists('/proc/driver/nvidia/version') || hasLinuxLibrary(host, 'libcuda.so.1'))
      );
    case 'vulkan':
      if (host.platform === 'win32') return host.exists(join(system32, 'vulkan-1.dll'));
      return host.platform === 'linux' && hasLinuxLibrary(host, 'libvulkan.so.1');
  }
}

/**
 * Every llamad.node this process could load, best first (for each backend in ADDON_BACKENDS order: a from-source
 * build under build/<backend>/Release, a prebuilt layout built here in build/prebuilt-<backend>/bin, then the installed
 * prebuilt package), without LLAMAD_ADDON. `LLAMAD_BACKEND` keeps only that backend and skips the usability check.
 * @throws Error when LLAMAD_BACKEND names no known backend
 */
export function addonCandidates(host: AddonHost): AddonCandidate[] {
  const forced = host.env.LLAMAD_BACKEND?.trim().toLowerCase();
  if (forced && !(ADDON_BACKENDS as readonly string[]).includes(forced)) {
    throw new Error(`LLAMAD_BACKEND="${forced}" is not a backend (expected ${ADDON_BACKENDS.join(', ')})`);
  }
  const backends = forced ? [forced as AddonBackend] : ADDON_BACKENDS.filter((b) => backendUsable(host, b));
  const out: AddonCandidate[] = [];
  for (const backend of backends) {
    for (const [origin, path] of [
      ['source-build', join(host.root, 'build', backend, 'Release', 'llamad.node')],
      ['prebuilt-build', join(host.root, 'build', `prebuilt-${backend}`, 'bin', 'llamad.node')],
    ] as const) {
      if (host.exists(path)) out.push({ path, backend, origin });
    }
    const packageName = prebuiltPackageName(host.platform, host.arch, backend);
    const pkg = host.resolvePackage(packageName);
    if (pkg && host.exists(join(pkg, 'bin', 'llamad.node'))) {
      out.push({ path: join(pkg, 'bin', 'llamad.node'), backend, origin: 'package', packageName });
    }
  }
  return out;
}

/**
 * The addon to load: LLAMAD_ADDON when set (null when that file does not exist), else the first of addonCandidates.
 * Returns null when there is none.
 */
export function chooseAddon(host: AddonHost): AddonCandidate | null {
  const explicit = host.env.LLAMAD_ADDON;
  if (explicit) {
    return host.exists(explicit) ? { path: resolve(explicit), backend: guessBackend(explicit), origin: 'env' } : null;
  }
  return addonCandidates(host)[0] ?? null;
}

/** The backend of an addon named by path: the build folder's name (build/<backend>, …-<backend>), else cpu. */
function guessBackend(path: string): AddonBackend {
  const parts = resolve(path).split(/[/\\]/);
  for (const part of parts.reverse()) {
    const backend = ADDON_BACKENDS.find((b) => part === b || part.endsWith(`-${b}`));
    if (backend) return backend;
  }
  return 'cpu';
}

/**
 * The one line said when no addon can be found: what was looked for and the two ways out (the prebuilt package for
 * this platform, or a source build with `npx llamad build`).
 */
export function missingAddonMessage(host: AddonHost): string {
  const forced = host.env.LLAMAD_BACKEND?.trim().toLowerCase();
  const backend = (ADDON_BACKENDS as readonly string[]).includes(forced ?? '') ? (forced as AddonBackend) : 'cpu';
  const pkg = prebuiltPackageName(host.platform, host.arch, backend);
  if (host.env.LLAMAD_ADDON) {
    return `native addon not found: LLAMAD_ADDON=${host.env.LLAMAD_ADDON} does not exist`;
  }
  return (
    `native addon not found for ${host.platform}-${host.arch}${forced ? ` (LLAMAD_BACKEND=${forced})` : ''}: ` +
    `install the prebuilt one with \`npm install ${pkg}\`, or build it from source with \`npx llamad build\` ` +
    '(needs cmake and a C++17 compiler; LLAMAD_BACKEND=cuda|vulkan picks a GPU backend)'
  );
}

/** The `version` field of the package.json at `path`, undefined when it cannot be read or has none. */
function packageVersion(host: AddonHost, path: string): string | undefined {
  const text = host.readText(path);
  if (text === undefined) return undefined;
  try {
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : undefined;
  } catch {
    return undefined;
  }
}

/** llamad's own version: the `version` of the package.json under `host.root`, undefined when unreadable. */
export function llamadVersion(host: AddonHost): string | undefined {
  return packageVersion(host, join(host.root, 'package.json'));
}

/**
 * Why the prebuilt package of `addon` does not match this llamad's JavaScript, or undefined when it does (or cannot be
 * told), checked before the addon is loaded: its package.json (next to bin/llamad.node; scripts/pack-prebuilt.mjs
 * writes llamad's version there) must carry the version of llamad's own package.json under `host.root`, as the N-API
 * surface and the protocol of binding.d.ts change between versions. Other origins have no package.json of their own;
 * every addon is checked again once loaded, on the version and ABI it exports (addon-identity.ts). The text names
 * both versions and the two ways out: the matching package, or a source build with `npx llamad build`.
 */
export function addonVersionMismatch(host: AddonHost, addon: AddonCandidate): string | undefined {
  if (addon.origin !== 'package') return undefined;
  const ours = llamadVersion(host);
  const packageJson = join(dirname(dirname(addon.path)), 'package.json');
  const theirs = packageVersion(host, packageJson);
  if (ours === undefined) return undefined;
  const name = addon.packageName ?? packageJson;
  if (theirs === ours) return undefined;
  return (
    `native addon ${name}${theirs === undefined ? ' (no version in its package.json)' : `@${theirs}`} at ` +
    `${addon.path} does not match llamad ${ours}: install the matching one with \`npm install ${name}@${ours}\`, ` +
    'or build the addon from source with `npx llamad build`'
  );
}
