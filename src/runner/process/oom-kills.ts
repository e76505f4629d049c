import { CgroupPaths, oomKillCount, ownCgroupDirAsync } from '../../common/system';

/**
 * Tells the runner deaths the kernel's OOM killer caused from other SIGKILLs (a `kill -9`, a container runtime): the
 * OOM killer leaves no trace on the victim's stderr and its SIGKILL looks like any other, but it counts every kill in
 * the `oom_kill` field of the cgroup's `memory.events` (common/system oomKillCount; `/proc/vmstat` without cgroup v2).
 * Each runner process reads the counter when it starts ({@link mark}); when it dies of a SIGKILL the daemon did not
 * send, {@link claim} reads it again: the death is an OOM kill when the counter rose since and that kill was not
 * already attributed to another runner's death (two runners OOM-killed together claim one kill each). One counter per
 * daemon (ProcessRunnerFactory). Both read the counter with fs/promises (they run on the runner load and death paths,
 * while other requests are served); the daemon's cgroup directory is resolved once, on the first read. A process of the cgroup that is not a runner (the counter counts the whole cgroup)
 * killed by the OOM killer while a runner is `kill -9`ed would be taken for that runner's OOM kill.
 */
export class OomKillCounter {
  /** The counter value up to which kills have been attributed to runner deaths. */
  private claimed = 0;

  /**
   * @param read the OOM-kill counter now (undefined: unknown); default: oomKillCount() of the daemon's cgroup (the
   *   mounts of {@link at} with default paths).
   */
  constructor(private readonly read: () => Promise<number | undefined> = OomKillCounter.reader({})) {}

  /** A counter over the cgroup v2 / procfs files under these mounts (tests: a temporary directory). */
  static at(paths: CgroupPaths): OomKillCounter {
    return new OomKillCounter(OomKillCounter.reader(paths));
  }

  /** Reads oom_kill under `paths`, resolving the daemon's cgroup directory once (on the first read) and keeping it. */
  private static reader(paths: CgroupPaths): () => Promise<number | undefined> {
    let dir: Promise<string | undefined> | undefined;
    return () => oomKillCount(paths, (dir ??= ownCgroupDirAsync(paths)));
  }

  /** The counter now, to keep as a runner's "before" (undefined: unknown, its death is never called an OOM kill). */
  mark(): Promise<number | undefined> {
    return this.read();
  }

  /**
   * Whether a runner that started when the counter was `before` and has just died of SIGKILL was killed by the OOM
   * killer: the counter is above both `before` and the kills already claimed. Claims that kill (decided in the turn
   * the read returns, so deaths claimed concurrently take one kill each).
   */
  async claim(before: number | undefined): Promise<boolean> {
    if (before === undefined) return false;
    const now = await this.read();
    if (now === undefined) return false;
    const from = Math.max(before, this.claimed);
    if (now <= from) return false;
    this.claimed = from + 1;
    return true;
  }
}
