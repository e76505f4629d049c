import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../../src/config';

/**
 * Imports one of the repository's ES-module scripts (scripts/<name>.mjs) from a test: a real `import()`, because
 * tsc's CommonJS output would turn `import()` into require(), which cannot load .mjs.
 */
export function importScript<T>(name: string): Promise<T> {
  const importEsm = new Function('url', 'return import(url)') as (url: string) => Promise<T>;
  return importEsm(pathToFileURL(join(REPO_ROOT, 'scripts', name)).href);
}
