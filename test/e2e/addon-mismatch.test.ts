// Issue 32 item 7: an addon built for another llamad (version or ABI) is a clear start-up error of the daemon, not a
// failure of every model load. The mismatching addon is a JavaScript module standing in for llamad.node (LLAMAD_ADDON
// may name any file `require` loads): the daemon compares what it exports exactly as it compares a compiled addon's
// `version` and `abi`, and building a second addon of another version here would take a full native build.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { REPO_ROOT } from '../../src/config';
import { findAddonPath } from '../../src/native';
import { LLAMAD_ADDON_ABI } from '../../src/native/addon-identity';
import { CLI, cli } from '../utils/cli';
import { freePort } from '../utils/registry-server';

const OURS = (JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const dir = mkdtempSync(join(tmpdir(), 'llamad-addon-mismatch-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** An addon stand-in at `<dir>/<name>.js` that reports `identity`. */
function standIn(name: string, identity: { version: string; abi: number }): string {
  const path = join(dir, `${name}.js`);
  writeFileSync(path, `module.exports = ${JSON.stringify(identity)};\n`);
  return path;
}

/** The environment of `llamad serve` on a free port with its own store and home. */
async function serveEnv(addon: string): Promise<NodeJS.ProcessEnv> {
  const port = await freePort();
  return {
    LLAMAD_ADDON: addon,
    OLLAMA_HOST: `127.0.0.1:${port}`,
    OLLAMA_MODELS: join(dir, 'models'),
    HOME: dir,
    NO_COLOR: '1',
  };
}

describe('daemon start-up with an addon of another llamad', () => {
  it(
    'another version: `llamad serve` exits 1 with one line naming both versions and the fix',
    { timeout: 60_000 },
    async () => {
      const addon = standIn('other-version', { version: '0.0.0-other', abi: LLAMAD_ADDON_ABI });
      const r = await cli(['serve'], await serveEnv(addon));
      assert.equal(r.code, 1, r.stdout + r.stderr);
      assert.deepEqual(r.stderr.trim().split('\n'), [
        `llamad failed to start: native addon at ${addon} (env) reports version 0.0.0-other, ABI ${LLAMAD_ADDON_ABI}, ` +
          `but this JavaScript is llamad ${OURS} (ABI ${LLAMAD_ADDON_ABI}): rebuild it with \`npx llamad build\` ` +
          '(`npm run build:native` in a checkout), or reinstall llamad',
      ]);
      assert.doesNotMatch(r.stdout, /listening on/, 'it never listened');
    },
  );

  it('the same version with another ABI: exits 1 with the ABI in the line', { timeout: 60_000 }, async () => {
    const addon = standIn('other-abi', { version: OURS, abi: LLAMAD_ADDON_ABI + 1 });
    const r = await cli(['serve'], await serveEnv(addon));
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      new RegExp(
        `^llamad failed to start: .* reports version ${OURS.replace(/\./g, '\\.')}, ABI ${LLAMAD_ADDON_ABI + 1}, `,
      ),
    );
  });

  it('the compiled addon of this checkout starts (the control)', { timeout: 60_000 }, async () => {
    const addon = findAddonPath();
    assert.ok(addon, 'no addon built (npm run build:native)');
    const child = spawn(process.execPath, [CLI, 'serve'], {
      env: { ...process.env, ...(await serveEnv(addon)) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    try {
      for (let i = 0; i < 300 && !/listening on/.test(output) && child.exitCode === null; i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.match(output, /listening on/, output);
      assert.doesNotMatch(output, /failed to start/);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
