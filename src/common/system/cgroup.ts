import { readFileSync } from 'node:fs';
import { totalmem } from 'node:os';
import { join, relative, sep } from 'node:path';

/*
 * The daemon's memory cgroup (v2, the unified hierarchy): its memory limit and its OOM-kill counter. Plain reads of
 * small kernel files, synchronous (a few hundred bytes each, answered from memory by the kernel). Every path is
 * injectable so that tests point them at a temporary directory holding fake files.
 */

/** Where the cgroup v2 hierarchy and procfs are mounted. */
export interface CgroupPaths {
  /** The cgroup v2 mount, default `/sys/fs/cgroup`. */
  cgroupRoot?: string;
  /** procfs, default `/proc` (`<procRoot>/self/cgroup` names the daemon's cgroup; `<procRoot>/vmstat`). */
  procRoot?: string;
}

const DEFAULT_CGROUP_ROOT = '/sys/fs/cgroup';
const DEFAULT_PROC_ROOT = '/proc';

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * The directory of the daemon's own cgroup v2: `<cgroupRoot>` + the path of the `0::<path>` line of
 * `<procRoot>/self/cgroup` (in a container with its own cgroup namespace that path is `/`, the mount itself). Falls
 * back to `<cgroupRoot>` when the line is missing (cgroup v1 only) or the directory is not visible under the mount.
 * @returns the directory, or undefined when `<cgroupRoot>/cgroup.controllers` does not exist (no cgroup v2 mounted).
 */
export function ownCgroupDir(paths: CgroupPaths = {}): string | undefined {
  const root = paths.cgroupRoot ?? DEFAULT_CGROUP_ROOT;
  if (readText(join(root, 'cgroup.controllers')) === undefined) return undefined;
  const self = readText(join(paths.procRoot ?? DEFAULT_PROC_ROOT, 'self', 'cgroup')) ?? '';
  const line = self.split('\n').find((l) => l.startsWith('0::'));
  if (!line) return root;
  const dir = join(root, line.slice(3).trim());
  // A path that climbs out of the mount (`..`) or is not there: use the mount itself.
  if (relative(root, dir).startsWith('..') || readText(join(dir, 'cgroup.procs')) === undefined) return root;
  return dir;
}

/**
 * The memory limit that applies to the daemon, bytes: the smallest `memory.max` of its cgroup and of every ancestor
 * up to the mount (a parent's limit caps its children too; `max` = none).
 * @returns undefined when no cgroup v2 is mounted or no level sets a limit.
 */
export function cgroupMemoryLimit(paths: CgroupPaths = {}): number | undefined {
  const root = paths.cgroupRoot ?? DEFAULT_CGROUP_ROOT;
  const own = ownCgroupDir(paths);
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
 * `physical` when given) and the cgroup v2 limit ({@link cgroupMemoryLimit}) when one is set.
 */
export function hostMemoryBytes(paths: CgroupPaths & { physical?: number } = {}): number {
  const physical = paths.physical ?? totalmem();
  const limit = cgroupMemoryLimit(paths);
  return limit === undefined ? physical : Math.min(physical, limit);
}

/** The value of `key` in a flat-keyed kernel file (`memory.events`, `/proc/vmstat`: `key value` lines). */
function keyedValue(text: string, key: string): number | undefined {
  for (const line of text.split('\n')) {
    const [name, value] = line.trim().split(/\s+/);
    if (name === key && value !== undefined && /^\d+$/.test(value)) return Number(value);
  }
  return undefined;
}

/**
 * How many processes the kernel's OOM killer has killed so far, as a counter to compare before/after a death:
 * `oom_kill` of the daemon's cgroup's `memory.events` (processes of that cgroup and its descendants killed by any
 * kind of OOM killer — the cgroup's limit or the whole machine's; the runner processes live in the daemon's cgroup),
 * else `oom_kill` of `<procRoot>/vmstat` (the whole machine, cgroup v1 or none).
 * @returns undefined when neither file is readable (the counter is unknown).
 */
export function oomKillCount(paths: CgroupPaths = {}): number | undefined {
  const dir = ownCgroupDir(paths);
  const events = dir === undefined ? undefined : readText(join(dir, 'memory.events'));
  const fromCgroup = events === undefined ? undefined : keyedValue(events, 'oom_kill');
  if (fromCgroup !== undefined) return fromCgroup;
  const vmstat = readText(join(paths.procRoot ?? DEFAULT_PROC_ROOT, 'vmstat'));
  return vmstat === undefined ? undefined : keyedValue(vmstat, 'oom_kill');
}
