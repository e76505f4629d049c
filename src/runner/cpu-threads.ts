import { availableParallelism } from 'node:os';
import { readdirSync, readFileSync } from 'node:fs';

/** Reads sysfs: the directory entries and the trimmed text of a file; throws when a path cannot be read. */
export interface SysfsReader {
  list(path: string): string[];
  read(path: string): string;
}

/** The real /sys. */
export const SYSFS: SysfsReader = {
  list: (path) => readdirSync(path),
  read: (path) => readFileSync(path, 'utf8').trim(),
};

const CPU_DIR = '/sys/devices/system/cpu';

/**
 * Physical CPU cores of this machine (Linux): the distinct (physical_package_id, core_id) pairs of the online CPUs
 * under /sys/devices/system/cpu, else the distinct `thread_siblings_list` entries; `fallback` (default
 * os.availableParallelism()) when sysfs says nothing usable (not Linux, a container hiding /sys). Hyper-threads of
 * one core count once: matrix multiplication gains nothing from them, as llama.cpp's common_cpu_get_num_math and
 * Ollama's runner default (one thread per performance core) also assume. Never less than 1; never more than the
 * logical CPUs the process may use (availableParallelism, which follows the affinity mask).
 */
export function physicalCores(reader: SysfsReader = SYSFS, fallback = availableParallelism()): number {
  const logical = Math.max(1, fallback);
  let cpus: string[];
  try {
    cpus = reader.list(CPU_DIR).filter((name) => /^cpu\d+$/.test(name));
  } catch {
    return logical;
  }
  const cores = new Set<string>();
  const siblings = new Set<string>();
  let unreadable = false;
  for (const cpu of cpus) {
    const topology = `${CPU_DIR}/${cpu}/topology`;
    // An offline CPU (its `online` file says 0; cpu0 often has none) keeps no topology: skip it.
    if (readOptional(reader, `${CPU_DIR}/${cpu}/online`) === '0') continue;
    const core = readOptional(reader, `${topology}/core_id`);
    const pkg = readOptional(reader, `${topology}/physical_package_id`);
    if (core !== undefined) cores.add(`${pkg ?? '0'}:${core}`);
    const list = readOptional(reader, `${topology}/thread_siblings_list`);
    if (list !== undefined) siblings.add(list);
    if (core === undefined && list === undefined) unreadable = true;
  }
  const found = !unreadable && cores.size > 0 ? cores.size : siblings.size;
  return found > 0 ? Math.min(found, logical) : logical;
}

let machineCores: number | undefined;

/**
 * {@link physicalCores} of this machine's /sys, read once per process and remembered: the topology does not change
 * while the daemon runs, and the callers (a runner's thread split on each acquire, context parameters at a load) are
 * on request paths, where sysfs must not be read synchronously. Each process asks first at start-up: the daemon when
 * its scheduler (thread-split.ts ThreadBalancer) and its in-process runner factory are built, a runner process before
 * it handles its first message (process/runner-child.ts serveRunner).
 */
export function machinePhysicalCores(): number {
  return (machineCores ??= physicalCores());
}

function readOptional(reader: SysfsReader, path: string): string | undefined {
  try {
    return reader.read(path);
  } catch {
    return undefined;
  }
}

/**
 * Splits `total` threads between `parts` contexts that decode at the same time: equal shares, the remainder one each
 * to the first ones, at least 1 each (more parts than threads oversubscribe). `parts` < 1 counts as 1.
 * @returns one count per part, e.g. (8, 3) → [3, 3, 2].
 */
export function splitThreads(total: number, parts: number): number[] {
  const n = Math.max(1, Math.floor(parts));
  const t = Math.max(1, Math.floor(total));
  const base = Math.floor(t / n);
  const extra = t % n;
  return Array.from({ length: n }, (_, i) => Math.max(1, base + (i < extra ? 1 : 0)));
}
