import { readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';

/*
 * The daemon's memory cgroup (v2, the unified hierarchy) as the runner load and death paths read it, while requests
 * are served: its directory and its OOM-kill counter, with fs/promises only (docs/architecture.md "Threading rules":
 * file I/O on a serving path is async). The memory limit that the configuration reads once at start-up is
 * src/config/host-memory.ts. Every path is injectable so that tests point them at a temporary directory holding fake
 * files.
 */

/** Where the cgroup v2 hierarchy and procfs are mounted. */
export interface CgroupPaths {
  /** The cgroup v2 mount, default `/sys/fs/cgroup`. */
  cgroupRoot?: string;
  /** procfs, default `/proc` (`<procRoot>/self/cgroup` names the daemon's cgroup; `<procRoot>/vmstat`). */
  procRoot?: string;
}

export const DEFAULT_CGROUP_ROOT = '/sys/fs/cgroup';
export const DEFAULT_PROC_ROOT = '/proc';

async function readTextAsync(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

/** The cgroup directory named by the `0::<path>` line of `/proc/self/cgroup` (`self`), when it stays under `root`. */
export function cgroupDirOf(root: string, self: string): string | undefined {
  const line = self.split('\n').find((l) => l.startsWith('0::'));
  if (!line) return undefined;
  const dir = join(root, line.slice(3).trim());
  // A path that climbs out of the mount (`..`): use the mount itself.
  return relative(root, dir).startsWith('..') ? undefined : dir;
}

/**
 * The directory of the daemon's own cgroup v2: `<cgroupRoot>` + the path of the `0::<path>` line of
 * `<procRoot>/self/cgroup` (in a container with its own cgroup namespace that path is `/`, the mount itself). Falls
 * back to `<cgroupRoot>` when the line is missing (cgroup v1 only) or the directory is not visible under the mount.
 * Callers resolve it once and keep the promise (OomKillCounter.at).
 * @returns the directory, or undefined when `<cgroupRoot>/cgroup.controllers` does not exist (no cgroup v2 mounted).
 */
export async function ownCgroupDirAsync(paths: CgroupPaths = {}): Promise<string | undefined> {
  const root = paths.cgroupRoot ?? DEFAULT_CGROUP_ROOT;
  if ((await readTextAsync(join(root, 'cgroup.controllers'))) === undefined) return undefined;
  const self = (await readTextAsync(join(paths.procRoot ?? DEFAULT_PROC_ROOT, 'self', 'cgroup'))) ?? '';
  const dir = cgroupDirOf(root, self);
  return dir === undefined || (await readTextAsync(join(dir, 'cgroup.procs'))) === undefined ? root : dir;
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
 * else `oom_kill` of `<procRoot>/vmstat` (the whole machine, cgroup v1 or none). Read with fs/promises.
 * @param cgroupDir the daemon's cgroup directory (undefined: no cgroup v2); default: resolved now by
 *   {@link ownCgroupDirAsync} — pass the promise kept from one resolution to read only `memory.events` each time.
 * @returns undefined when neither file is readable (the counter is unknown).
 */
export async function oomKillCount(
  paths: CgroupPaths = {},
  cgroupDir: Promise<string | undefined> = ownCgroupDirAsync(paths),
): Promise<number | undefined> {
  const dir = await cgroupDir;
  const events = dir === undefined ? undefined : await readTextAsync(join(dir, 'memory.events'));
  const fromCgroup = events === undefined ? undefined : keyedValue(events, 'oom_kill');
  if (fromCgroup !== undefined) return fromCgroup;
  const vmstat = await readTextAsync(join(paths.procRoot ?? DEFAULT_PROC_ROOT, 'vmstat'));
  return vmstat === undefined ? undefined : keyedValue(vmstat, 'oom_kill');
}
