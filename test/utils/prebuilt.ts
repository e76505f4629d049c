import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/config';

/** The prebuilt layout's CPU addon that `npm run pack:all -- --backends cpu` builds (docs/native.md "Prebuilt layout"). */
export const PREBUILT_CPU_ADDON = join(REPO_ROOT, 'build', 'prebuilt-cpu', 'bin', 'llamad.node');

/**
 * Why a test of the prebuilt CPU layout cannot run here, or undefined when it can: the layout is Linux x86-64 only
 * (ggml's CPU variants), and it must be built. CI builds it and sets LLAMAD_REQUIRE_PREBUILT=1, under which a missing
 * layout is not a reason to skip: the test then runs and fails on it (`requirePrebuiltCpuAddon`).
 */
export function prebuiltCpuSkip(): string | undefined {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return `ggml's CPU variants are x86-64 Linux only (here ${process.platform}-${process.arch})`;
  }
  if (existsSync(PREBUILT_CPU_ADDON) || process.env.LLAMAD_REQUIRE_PREBUILT === '1') return undefined;
  return `prebuilt layout not built (npm run pack:all -- --backends cpu): ${PREBUILT_CPU_ADDON} is missing`;
}

/** @throws Error when the prebuilt CPU addon is missing (under LLAMAD_REQUIRE_PREBUILT=1) */
export function requirePrebuiltCpuAddon(): string {
  if (!existsSync(PREBUILT_CPU_ADDON)) {
    throw new Error(
      `LLAMAD_REQUIRE_PREBUILT=1 but ${PREBUILT_CPU_ADDON} is missing (npm run pack:all -- --backends cpu)`,
    );
  }
  return PREBUILT_CPU_ADDON;
}

/**
 * The `libggml-cpu-<variant>.so` files mapped into process `pid` (Linux /proc/<pid>/maps): after the prebuilt addon
 * loaded, exactly the variant ggml_backend_load_best chose (it unloads the ones it only scored).
 */
export function mappedCpuVariants(pid: number | 'self' = 'self'): string[] {
  const maps = readFileSync(`/proc/${pid}/maps`, 'utf8');
  const names = maps
    .split('\n')
    .map((l) => /libggml-cpu-([\w-]+)\.so/.exec(l)?.[1])
    .filter((n): n is string => n !== undefined);
  return [...new Set(names)];
}

/**
 * The GGML_CPU_PROBE_TRAP value that takes the best CPU variant away on this processor, from the variant's
 * llama_print_system_info (`AVX512 = 1`, `AVX2 = 1`, …): `avx512` when the variant uses AVX-512 (ggml then loads an
 * AVX2 variant), else `avx2` when it uses AVX2 (an AVX variant follows), else undefined (nothing lower worth testing).
 * Returns the hook's value and the system-info flag that the lower variant must lack.
 */
export function trapForBestVariant(systemInfo: string): { trap: string; flag: string } | undefined {
  if (/\bAVX512 = 1\b/.test(systemInfo)) return { trap: 'avx512', flag: 'AVX512' };
  if (/\bAVX2 = 1\b/.test(systemInfo)) return { trap: 'avx2', flag: 'AVX2' };
  return undefined;
}
