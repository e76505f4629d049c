import { readdirSync, readFileSync } from 'node:fs';

/** Whether a process with this pid exists (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runner processes (a command line naming runner-child.js) whose parent is `ppid`, read from /proc (Linux). */
export function runnersOf(ppid: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (parent === ppid && cmdline.includes('runner-child.js')) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}
