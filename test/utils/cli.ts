import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/config';

/** The compiled CLI (`llamad`). */
export const CLI = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

/** What one CLI run printed and how it ended. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node dist/src/cli/main.js …` as a subprocess (asynchronously: a daemon under test may run in this process)
 * with `input` on a piped, non-TTY stdin (progress then prints as plain lines); stdout and stderr are pipes too.
 * History is off (OLLAMA_NOHISTORY) so runs leave nothing behind.
 */
export function cli(args: string[], env: NodeJS.ProcessEnv, input = ''): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      env: { ...process.env, OLLAMA_NOHISTORY: '1', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(input);
  });
}
