// Shared cmake defines for every build of the vendored llama.cpp: the addon (build-native.mjs) and the peer
// llama-server used by the benchmark (build-llama-server.mjs). One source, so both are compiled with the same flags.
//
// LLAMAD_BACKEND=cpu (default) | cuda | vulkan | metal. CPU is always built.
// CPU code is compiled for the machine that runs the install (GGML_NATIVE=ON, -march=native), as llama.cpp's own
// `cmake -B build` does: a from-source install runs where it was built. LLAMAD_PORTABLE=1 (or the older
// LLAMAD_NATIVE=0) gives a portable x86-64 build with AVX2/FMA/F16C (ggml's non-native defaults) for a build that is
// copied to other machines. The reasons and measurements: docs/native.md "CPU build".
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

// OpenMP: on, as in llama.cpp's default build (measured: docs/native.md "CPU build"); LLAMAD_OPENMP=0 turns it off.
// LLAMAD_PREBUILT=1 builds the redistributable layout of a prebuilt package into build/prebuilt-<backend>
// (scripts/pack-prebuilt.mjs). LLAMAD_CUDA_ARCHS sets CMAKE_CUDA_ARCHITECTURES. LLAMAD_BUILD_TYPE=Release|Debug (default Release).

/**
 * Whether the CPU build targets this machine (GGML_NATIVE) rather than a portable instruction set.
 * @param {NodeJS.ProcessEnv} env the environment holding LLAMAD_PORTABLE / LLAMAD_NATIVE
 * @returns {boolean}
 */
export function isNativeBuild(env = process.env) {
  return !(env.LLAMAD_PORTABLE === '1' || env.LLAMAD_NATIVE === '0');
}

/**
 * Whether this is the redistributable build of a prebuilt package (LLAMAD_PREBUILT=1): shared libraries, every backend
 * a dlopen'ed module and all of ggml's CPU variants (CMakeLists.txt LLAMAD_PREBUILT; docs/library.md).
 * @param {NodeJS.ProcessEnv} env
 * @returns {boolean}
 */
export function isPrebuiltBuild(env = process.env) {
  return env.LLAMAD_PREBUILT === '1';
}

/**
 * The build folder of a backend under build/: `<backend>` for a from-source build, `prebuilt-<backend>` for a
 * prebuilt package's build (the addon loader looks in both: src/native/addon-candidates.ts).
 * @param {string} backend
 * @param {NodeJS.ProcessEnv} env
 * @returns {string}
 */
export function buildDirName(backend, env = process.env) {
  return isPrebuiltBuild(env) ? `prebuilt-${backend}` : backend;
}

/**
 * Resolves the backend and the cmake defines shared by all llama.cpp builds of this project.
 * @param {NodeJS.ProcessEnv} env the environment holding the LLAMAD_* switches
 * @returns {{ backend: string, defines: Record<string, string> }}
 * @throws {Error} on an unknown LLAMAD_BACKEND
 */
export function nativeFlags(env = process.env) {
  const backend = (env.LLAMAD_BACKEND ?? 'cpu').toLowerCase();
  const prebuilt = isPrebuiltBuild(env);
  const defines = {
    CMAKE_BUILD_TYPE: env.LLAMAD_BUILD_TYPE ?? 'Release',
    GGML_NATIVE: isNativeBuild(env) && !prebuilt ? 'ON' : 'OFF',
    LLAMAD_PREBUILT: prebuilt ? 'ON' : 'OFF',
    GGML_OPENMP: env.LLAMAD_OPENMP === '0' ? 'OFF' : 'ON',
    GGML_CUDA: 'OFF',
    GGML_VULKAN: 'OFF',
    GGML_METAL: 'OFF',
    // llama.cpp's RPC backend in every build: models can offload layers to rpc-server workers (docs/native.md "RPC").
    GGML_RPC: 'ON',
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

/**
 * Finds `name` on the PATH of `env`.
 * @returns {string | undefined} the full path
 */
function onPath(name, env) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/**
 * What a GPU backend's build needs and cannot find, checked before CMake runs (whose own failure is a page of CMake
 * errors): CUDA needs nvcc (PATH, CUDACXX, CUDA_PATH / CUDAToolkit_ROOT / CUDA_HOME, /usr/local/cuda); Vulkan needs
 * glslc (PATH or VULKAN_SDK/bin). The CPU and Metal backends need nothing beyond the C++ compiler.
 * @param {string} backend
 * @param {NodeJS.ProcessEnv} env
 * @param {string[]} cudaRoots where a CUDA toolkit is installed when no variable names one
 * @returns {string | undefined} a message naming what is missing and how to get it, or undefined when all is there
 */
export function missingToolchain(backend, env = process.env, cudaRoots = ['/usr/local/cuda']) {
  if (backend === 'cuda') {
    const roots = [env.CUDA_PATH, env.CUDAToolkit_ROOT, env.CUDA_HOME, ...cudaRoots].filter(Boolean);
    const found =
      (env.CUDACXX && existsSync(env.CUDACXX)) ||
      onPath('nvcc', env) ||
      roots.some((r) => existsSync(join(r, 'bin', 'nvcc')));
    if (!found) {
      return (
        'LLAMAD_BACKEND=cuda needs the CUDA toolkit, and nvcc was not found (looked on PATH, in CUDACXX, CUDA_PATH, ' +
        'CUDAToolkit_ROOT, CUDA_HOME and /usr/local/cuda). Install it (https://developer.nvidia.com/cuda-downloads, or ' +
        '`apt-get install nvidia-cuda-toolkit`), or point CUDACXX at nvcc; or build without LLAMAD_BACKEND for the CPU.'
      );
    }
    const includes = [...roots, ...(cudaRoots.length > 0 ? ['/usr'] : [])].flatMap((r) => [
      join(r, 'include'),
      join(r, 'targets', 'x86_64-linux', 'include'),
    ]);
    if (!includes.some((dir) => existsSync(join(dir, 'cublas_v2.h')))) {
      return (
        'LLAMAD_BACKEND=cuda: nvcc was found but not cuBLAS (cublas_v2.h), which ggml-cuda links: install the full ' +
        'CUDA toolkit (its libcublas-dev / cuda-libraries-dev part).'
      );
    }
    if (!env.LLAMAD_CUDA_ARCHS && !onPath('nvidia-smi', env)) {
      return (
        'LLAMAD_BACKEND=cuda: no NVIDIA driver is visible here (no nvidia-smi), so CMake cannot detect the GPU ' +
        'architecture: set LLAMAD_CUDA_ARCHS, e.g. 90 (H100), 89 (RTX 40xx, L4), 86 (RTX 30xx, A10), 80 (A100), ' +
        'or a list such as "80;86;89;90".'
      );
    }
  }
  if (backend === 'vulkan') {
    const sdk = env.VULKAN_SDK ? join(env.VULKAN_SDK, 'bin', 'glslc') : undefined;
    const glslc = sdk && existsSync(sdk) ? sdk : onPath('glslc', env);
    // ggml's flash-attention decode shaders need GL_KHR_cooperative_matrix, which glslang learned in 14.x: Debian 12's
    // glslc (glslang 11.13) stops at shader 108 of 522 (docs/native.md "Vulkan on lavapipe").
    const glslang = glslc
      ? /glslang\s+(\d+)\./.exec(spawnSync(glslc, ['--version'], { encoding: 'utf8' }).stdout ?? '')
      : null;
    if (glslang && Number(glslang[1]) < 14) {
      return (
        `LLAMAD_BACKEND=vulkan: ${glslc} is built on glslang ${glslang[1]}, too old for ggml's cooperative-matrix ` +
        'shaders (glslang 14 or newer is needed). Install a newer Vulkan SDK and set VULKAN_SDK; on Debian 12 ' +
        '`sh scripts/vulkan-sdk-debian12.sh` installs one under /opt/vulkan-sdk-deb13 (docs/native.md).'
      );
    }
    if (!glslc) {
      return (
        'LLAMAD_BACKEND=vulkan needs glslc (shaderc) and the Vulkan headers, and glslc was not found (PATH, ' +
        'VULKAN_SDK/bin). Install the Vulkan SDK, or on Debian/Ubuntu `apt-get install libvulkan-dev glslc ' +
        'spirv-headers`; on Debian 12 run `sh scripts/vulkan-sdk-debian12.sh` and set VULKAN_SDK (docs/native.md).'
      );
    }
  }
  return undefined;
}
