// Shared cmake defines for every build of the vendored llama.cpp: the addon (build-native.mjs) and the peer
// llama-server used by the benchmark (build-llama-server.mjs). One source, so both are compiled with the same flags.
//
// LLAMAD_BACKEND=cpu (default) | cuda | vulkan | metal. CPU is always built.
// LLAMAD_NATIVE=1 compiles for this machine's CPU (-march=native); the default is a portable x86-64 build with
// AVX2/FMA/F16C (ggml's non-native instruction set defaults). LLAMAD_CUDA_ARCHS sets CMAKE_CUDA_ARCHITECTURES.
// LLAMAD_BUILD_TYPE=Release|Debug (default Release).

/**
 * Resolves the backend and the cmake defines shared by all llama.cpp builds of this project.
 * @param {NodeJS.ProcessEnv} env the environment holding the LLAMAD_* switches
 * @returns {{ backend: string, defines: Record<string, string> }}
 * @throws {Error} on an unknown LLAMAD_BACKEND
 */
export function nativeFlags(env = process.env) {
  const backend = (env.LLAMAD_BACKEND ?? 'cpu').toLowerCase();
  const defines = {
    CMAKE_BUILD_TYPE: env.LLAMAD_BUILD_TYPE ?? 'Release',
    GGML_NATIVE: env.LLAMAD_NATIVE === '1' ? 'ON' : 'OFF',
    GGML_OPENMP: 'OFF',
    GGML_CUDA: 'OFF',
    GGML_VULKAN: 'OFF',
    GGML_METAL: 'OFF',
  };
  switch (backend) {
    case 'cpu':
      break;
    case 'cuda':
      defines.GGML_CUDA = 'ON';
      if (env.LLAMAD_CUDA_ARCHS) defines.CMAKE_CUDA_ARCHITECTURES = env.LLAMAD_CUDA_ARCHS;
      break;
    case 'vulkan':
      defines.GGML_VULKAN = 'ON';
      break;
    case 'metal':
      defines.GGML_METAL = 'ON';
      break;
    default:
      throw new Error(`unknown LLAMAD_BACKEND "${backend}" (expected cpu, cuda, vulkan or metal)`);
  }
  return { backend, defines };
}
