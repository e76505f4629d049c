// The addon's identity, exported as `version` and `abi` (binding.d.ts) and compared by loadBinding() with the
// JavaScript's own (src/native/addon-identity.ts; docs/native.md "Version and ABI").
#pragma once

// The integer contract between this addon and the TypeScript that loads it. Bump it (here and LLAMAD_ADDON_ABI in
// src/native/addon-identity.ts, together: test/unit/native/addon-identity.test.ts compares them) whenever
// binding.d.ts changes incompatibly: a member removed or renamed, a parameter or result whose shape or meaning
// changes, an error code that changes meaning. Adding an optional member is compatible and does not bump it.
#define LLAMAD_ADDON_ABI 1

// LLAMAD_VERSION: llamad's package.json `version`, defined for addon.cpp only by CMakeLists.txt (read at configure).
#ifndef LLAMAD_VERSION
#error "LLAMAD_VERSION is not defined: build the addon through CMakeLists.txt (npm run build:native)"
#endif
