import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { importScript } from '../../utils/esm';

interface NativeFlagsModule {
  nativeFlags(env: NodeJS.ProcessEnv): { backend: string; defines: Record<string, string> };
  buildDirName(backend: string, env: NodeJS.ProcessEnv): string;
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
    flags = await importScript<NativeFlagsModule>('native-flags.mjs');
    dir = mkdtempSync(join(tmpdir(), 'llamad-flags-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('builds for this CPU with OpenMP by default, as llama.cpp’s own cmake -B build does', () => {
    const { backend, defines } = flags.nativeFlags({});
    assert.equal(backend, 'cpu');
    assert.equal(defines.GGML_NATIVE, 'ON');
    assert.equal(defines.GGML_OPENMP, 'ON');
  });

  it('LLAMAD_PREBUILT=1 builds the portable prebuilt layout into build/prebuilt-<backend>', () => {
    const { defines } = flags.nativeFlags({ LLAMAD_PREBUILT: '1' });
    assert.equal(defines.LLAMAD_PREBUILT, 'ON');
    assert.equal(defines.GGML_NATIVE, 'OFF', 'ggml refuses GGML_CPU_ALL_VARIANTS with GGML_NATIVE');
    assert.equal(flags.nativeFlags({}).defines.LLAMAD_PREBUILT, 'OFF');
    assert.equal(flags.buildDirName('cpu', { LLAMAD_PREBUILT: '1' }), 'prebuilt-cpu');
    assert.equal(flags.buildDirName('cuda', {}), 'cuda');
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
