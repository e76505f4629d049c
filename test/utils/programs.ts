import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The external programs some tests run, with the Debian 12 package that installs each (`.ci/run` installs them all;
 * `npm install` brings none of them).
 */
export const PROGRAM_PACKAGES = {
  'docker-registry': 'docker-registry',
  htpasswd: 'apache2-utils',
  'ssh-keygen': 'openssh-client',
  'redis-server': 'redis-server',
  haproxy: 'haproxy',
  kubectl: 'kubernetes-client',
  chromium: 'chromium',
  'espeak-ng': 'espeak-ng',
  sox: 'sox',
} as const;

/** A program named in PROGRAM_PACKAGES. */
export type ExternalProgram = keyof typeof PROGRAM_PACKAGES;

/** Whether `name` is an executable file in one of the directories of $PATH (what `command -v` finds). */
export function onPath(name: string, path: string = process.env.PATH ?? ''): boolean {
  return path
    .split(delimiter)
    .filter((dir) => dir !== '')
    .some((dir) => {
      const file = join(dir, name);
      try {
        accessSync(file, constants.X_OK);
        return statSync(file).isFile();
      } catch {
        return false;
      }
    });
}

/**
 * The skip reason for tests that run `programs`: undefined when all are on $PATH, else which are missing and the
 * command that installs them, for node:test's `{ skip }` option, e.g.
 * `htpasswd is not installed: run "apt-get install -y apache2-utils"`.
 */
export function missingPrograms(...programs: ExternalProgram[]): string | undefined {
  const missing = programs.filter((p) => !onPath(p));
  if (missing.length === 0) return undefined;
  const packages = [...new Set(missing.map((p) => PROGRAM_PACKAGES[p]))];
  const names = missing.length === 1 ? missing[0] : `${missing.slice(0, -1).join(', ')} and ${missing.at(-1)}`;
  return `${names} ${missing.length === 1 ? 'is' : 'are'} not installed: run "apt-get install -y ${packages.join(' ')}"`;
}
