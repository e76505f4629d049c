import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join, relative, sep } from 'node:path';
import { CgroupPaths, cgroupDirOf, DEFAULT_CGROUP_ROOT, DEFAULT_PROC_ROOT } from '../common/system';

/*
 * The memory the daemon may use, read once while the configuration is built (loadConfig, before anything listens):
 * synchronous reads of small kernel files, which loadConfig's synchronous contract needs. Nothing here runs while
 * requests are served; what the runner paths read then is src/common/system/cgroup.ts (fs/promises).
 */

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * The directory of the daemon's own cgroup v2, by the rules of ownCgroupDirAsync (src/common/system/cgroup.ts), read
 * synchronously for start-up.
 * @returns the directory, or undefined when no cgroup v2 is mounted.
 */
export function ownCgroupDirAtStartup(paths: CgroupPaths): string | undefined {
  const root = paths.cgroupRoot ?? DEFAULT_CGROUP_ROOT;
  if (readText(join(root, 'cgroup.controllers')) === undefined) return undefined;
  const dir = cgroupDirOf(root, readText(join(paths.procRoot ?? DEFAULT_PROC_ROOT, 'self', 'cgroup')) ?? '');
  return dir === undefined || readText(join(dir, 'cgroup.procs')) === undefined ? root : dir;
}

/**
 * The memory limit that applies to the daemon, bytes: the smallest `memory.max` of its cgroup and of every ancestor
 * up to the mount (a parent's limit caps its children too; `max` = none). Start-up only.
 * @returns undefined when no cgroup v2 is mounted or no level sets a limit.
 */
export function cgroupMemoryLimit(paths: CgroupPaths = {}): number | undefined {
  const root = paths.cgroupRoot ?? DEFAULT_CGROUP_ROOT;
  const own = ownCgroupDirAtStartup(paths);
  if (own === undefined) return undefined;
  const levels = relative(root, own).split(sep).filter(Boolean);
  let limit: number | undefined;
  for (let depth = levels.length; depth >= 0; depth--) {
    const raw = readText(join(root, ...levels.slice(0, depth), 'memory.max'))?.trim();
    if (raw !== undefined && /^\d+$/.test(raw)) limit = Math.min(limit ?? Infinity, Number(raw));
  }
  return limit;
}

/**
 * The memory the daemon may use in all, bytes: the smaller of the machine's physical memory (os.totalmem, or
 * `physical` when given) and the cgroup v2 limit ({@link cgroupMemoryLimit}) when one is set. Start-up only.
 */
export function hostMemoryBytes(paths: CgroupPaths & { physical?: number } = {}): number {
  const physical = paths.physical ?? totalmem();
  const limit = cgroupMemoryLimit(paths);
  return limit === undefined ? physical : Math.min(physical, limit);
}
