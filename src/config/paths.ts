import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/**
 * The package's root folder (where package.json, assets/, build/ and vendor/ are): two levels above this file both
 * in src/ (ts, run by tests through ts sources) and three in dist/src/ (the compiled js). The one place that knows
 * the layout; native/ finds the addon under it, templates/ its template library.
 */
export const REPO_ROOT = resolve(
  __dirname,
  existsSync(join(__dirname, '..', '..', 'package.json')) ? '../..' : '../../..',
);
