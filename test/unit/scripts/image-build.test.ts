import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { importScript } from '../../utils/esm';

interface ImageBuildModule {
  bud(args: string[], env?: NodeJS.ProcessEnv): void;
}

let image: ImageBuildModule;
let dir: string;

/**
 * A fake `buildah` on PATH that appends "<BUILDAH_ISOLATION or default> <args>" to `calls` and fails (as crun does
 * where it cannot start a container) unless BUILDAH_ISOLATION is one of `works`.
 */
function fakeBuildah(works: string[]): { env: NodeJS.ProcessEnv; calls: () => string[] } {
  const bin = mkdtempSync(join(dir, 'bin-'));
  const calls = join(bin, 'calls');
  writeFileSync(calls, '');
  const cases = works.map((w) => `${w}) exit 0 ;;`).join(' ');
  writeFileSync(
    join(bin, 'buildah'),
    `#!/bin/sh\necho "\${BUILDAH_ISOLATION:-default} $*" >> '${calls}'\n` +
      `case "\${BUILDAH_ISOLATION:-default}" in ${cases} *) echo 'error running container: exit status 1' >&2; exit 1 ;; esac\n`,
  );
  chmodSync(join(bin, 'buildah'), 0o755);
  const env: NodeJS.ProcessEnv = { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` };
  delete env.BUILDAH_ISOLATION;
  return { env, calls: () => readFileSync(calls, 'utf8').split('\n').filter(Boolean) };
}

// Issue 32: `npm run image:test` fell back to chroot for `podman run` but not for `buildah bud`, which fails where
// crun cannot start a container.
describe('scripts/image-build.mjs bud()', () => {
  before(async () => {
    image = await importScript<ImageBuildModule>('image-build.mjs');
    dir = mkdtempSync(join(tmpdir(), 'llamad-buildah-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('builds once when the default isolation works', () => {
    const fake = fakeBuildah(['default']);
    image.bud(['-t', 'x', '.'], fake.env);
    assert.deepEqual(fake.calls(), ['default bud -t x .']);
  });

  it('builds again with BUILDAH_ISOLATION=chroot when the default isolation cannot start a container', () => {
    const fake = fakeBuildah(['chroot']);
    image.bud(['-t', 'x', '.'], fake.env);
    assert.deepEqual(fake.calls(), ['default bud -t x .', 'chroot bud -t x .']);
  });

  it('fails when the chroot build fails too', () => {
    const fake = fakeBuildah([]);
    assert.throws(() => image.bud(['.'], fake.env), /buildah exited 1/);
    assert.deepEqual(fake.calls(), ['default bud .', 'chroot bud .']);
  });

  it('keeps an isolation the caller chose, without a retry', () => {
    const fake = fakeBuildah(['chroot']);
    assert.throws(() => image.bud(['.'], { ...fake.env, BUILDAH_ISOLATION: 'oci' }), /buildah exited 1/);
    assert.deepEqual(fake.calls(), ['oci bud .']);
  });
});
