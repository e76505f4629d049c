import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '../../../src/config';

interface NativeFlagsModule {
  nativeFlags(env: NodeJS.ProcessEnv): { backend: string; defines: Record<string, string> };
  missingToolchain(backend: string, env: NodeJS.ProcessEnv, cudaRoots?: string[]): string | undefined;
}

let flags: NativeFlagsModule;
let dir: string;

/** An executable script `name` in `bin` that prints `output`. */
function fakeTool(bin: string, name: string, output = ''): void {
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, name), `#!/bin/sh\necho '${output}'\n`);
  chmodSync(join(bin, name), 0o755);
}

describe('scripts/native-flags.mjs', () => {
  before(async () => {
    // A real ES-module import: tsc's CommonJS output would turn `import()` into require(), which cannot load .mjs.
    const importEsm = new Function('url', 'return import(url)') as (url: string) => Promise<unknown>;
    flags = (await importEsm(pathToFileURL(join(REPO_ROOT, 'scripts', 'native-flags.mjs')).href)) as NativeFlagsModule;
    dir = mkdtempSync(join(tmpdir(), 'llamad-flags-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('builds for this CPU with OpenMP by default, as llama.cpp’s own cmake -B build does', () => {
    const { backend, defines } = flags.nativeFlags({});
    assert.equal(backend, 'cpu');
    assert.equal(defines.GGML_NATIVE, 'ON');
    assert.equal(defines.GGML_OPENMP, 'ON');
  });

  it('builds the RPC backend into every build (addon and the bench llama-server builds)', () => {
    for (const backend of ['cpu', 'cuda', 'vulkan', 'metal']) {
      assert.equal(flags.nativeFlags({ LLAMAD_BACKEND: backend }).defines.GGML_RPC, 'ON');
    }
  });

  it('LLAMAD_PORTABLE=1 (or LLAMAD_NATIVE=0) gives the portable build; LLAMAD_OPENMP=0 turns OpenMP off', () => {
    assert.equal(flags.nativeFlags({ LLAMAD_PORTABLE: '1' }).defines.GGML_NATIVE, 'OFF');
    assert.equal(flags.nativeFlags({ LLAMAD_NATIVE: '0' }).defines.GGML_NATIVE, 'OFF');
    assert.equal(flags.nativeFlags({ LLAMAD_OPENMP: '0' }).defines.GGML_OPENMP, 'OFF');
  });

  it('rejects an unknown backend', () => {
    assert.throws(() => flags.nativeFlags({ LLAMAD_BACKEND: 'rocm9' }), /unknown LLAMAD_BACKEND "rocm9"/);
  });

  it('names what a CUDA build lacks before CMake runs: nvcc, cuBLAS, a GPU to detect the architecture', () => {
    const empty = { PATH: join(dir, 'nothing') };
    assert.match(flags.missingToolchain('cuda', empty, []) ?? '', /needs the CUDA toolkit, and nvcc was not found/);
    const root = join(dir, 'cuda');
    fakeTool(join(root, 'bin'), 'nvcc');
    assert.match(
      flags.missingToolchain('cuda', { ...empty, CUDA_PATH: root }, []) ?? '',
      /not cuBLAS \(cublas_v2\.h\)/,
    );
    mkdirSync(join(root, 'include'), { recursive: true });
    writeFileSync(join(root, 'include', 'cublas_v2.h'), '');
    assert.match(flags.missingToolchain('cuda', { ...empty, CUDA_PATH: root }, []) ?? '', /set LLAMAD_CUDA_ARCHS/);
    assert.equal(flags.missingToolchain('cuda', { ...empty, CUDA_PATH: root, LLAMAD_CUDA_ARCHS: '90' }, []), undefined);
  });

  it('names a missing or too old glslc for Vulkan', () => {
    const empty = { PATH: join(dir, 'nothing') };
    assert.match(flags.missingToolchain('vulkan', empty) ?? '', /glslc was not found/);
    fakeTool(join(dir, 'old'), 'glslc', 'glslang 11.13.0-1');
    assert.match(flags.missingToolchain('vulkan', { PATH: join(dir, 'old') }) ?? '', /glslang 11, too old/);
    fakeTool(join(dir, 'sdk', 'bin'), 'glslc', 'glslang 15.1.0+1.4.309.0-1');
    assert.equal(flags.missingToolchain('vulkan', { ...empty, VULKAN_SDK: join(dir, 'sdk') }), undefined);
  });

  it('asks nothing for the CPU backend', () => {
    assert.equal(flags.missingToolchain('cpu', { PATH: '' }), undefined);
  });
});
