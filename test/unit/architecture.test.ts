import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { REPO_ROOT } from '../../src/config';

/** One violation as dependency-cruiser's JSON output reports it. */
interface Violation {
  from: string;
  to: string;
  rule: { name: string; severity: string };
}

const DEPCRUISE = join(REPO_ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

/** Runs dependency-cruiser over `src` of `cwd` with the project's rules (.dependency-cruiser.cjs); its violations. */
function cruise(cwd: string): Violation[] {
  const r = spawnSync(
    process.execPath,
    [DEPCRUISE, 'src', '--config', join(REPO_ROOT, '.dependency-cruiser.cjs'), '--output-type', 'json'],
    { cwd, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 },
  );
  assert.ok(r.stdout, `dependency-cruiser printed nothing: ${r.stderr}`);
  const out = JSON.parse(r.stdout) as { summary: { violations: Violation[] } };
  return out.summary.violations;
}

describe('the layers of src/ (docs/architecture.md "Layers", .dependency-cruiser.cjs)', () => {
  let dir: string;

  /** Writes a file of the scratch tree. */
  function write(path: string, text: string): void {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'llamad-layers-'));
    copyFileSync(join(REPO_ROOT, 'tsconfig.json'), join(dir, 'tsconfig.json'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('hold in this tree: no import cycle, no import from a lower layer up', () => {
    const violations = cruise(REPO_ROOT);
    assert.deepEqual(
      violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`),
      [],
    );
  });

  it('are really checked: an upward import, a cycle and a base → platform import are each reported', () => {
    write('src/runner/runner.ts', "import type { Plan } from '../generation/plan';\nexport type Spec = Plan;\n");
    write(
      'src/generation/plan.ts',
      "import type { Spec } from '../runner/runner';\nexport type Plan = { s?: Spec };\n",
    );
    write('src/common/http/pipe.ts', "import { gate } from '../../security/gate';\nexport const pipe = gate;\n");
    write('src/security/gate.ts', 'export const gate = 1;\n');
    const rules = new Set(cruise(dir).map((v) => v.rule.name));
    assert.ok(rules.has('runner-at-the-bottom-of-inference'), [...rules].join(', '));
    assert.ok(rules.has('no-cycle'), [...rules].join(', '));
    assert.ok(rules.has('base-at-the-bottom'), [...rules].join(', '));
  });
});
