import type { AddonCandidate } from './addon-candidates';

/**
 * The integer contract between this JavaScript and the native addon it loads (docs/native.md "Version and ABI"): the
 * addon exports the same number as `abi` (native/addon_abi.h). Bump both together whenever binding.d.ts changes
 * incompatibly: a member removed or renamed, a parameter or result whose shape or meaning changes, an error code that
 * changes meaning. Adding an optional member is compatible and does not bump it.
 * test/unit/native/addon-identity.test.ts checks that the two definitions agree.
 */
export const LLAMAD_ADDON_ABI = 1;

/** What the addon says it is: its `version` and `abi` exports (absent in an addon built before they existed). */
export interface ReportedAddonIdentity {
  version?: unknown;
  abi?: unknown;
}

/** What this JavaScript expects: llamad's package.json version (undefined when unreadable) and LLAMAD_ADDON_ABI. */
export interface ExpectedAddonIdentity {
  version: string | undefined;
  abi: number;
}

/** How a reported value reads in the error: the value, or that the addon does not say. */
function shown(value: unknown, what: string): string {
  if (value === undefined) return `no ${what}`;
  return typeof value === 'string' || typeof value === 'number'
    ? `${what} ${value}`
    : `${what} ${JSON.stringify(value)}`;
}

/**
 * Why the loaded addon does not belong to this JavaScript, or undefined when it does: the addon's `version` (llamad's
 * package.json version, compiled in) must equal `expected.version` and its `abi` must equal `expected.abi`. An addon
 * that exports neither was built before they existed and never matches. When `expected.version` is unknown (no
 * readable package.json) only the ABI is compared. The text is one line: the addon's path and origin, both versions
 * and ABIs, and the fix (for a prebuilt package: install the matching one, or build from source; otherwise rebuild
 * with `npx llamad build`).
 */
export function addonIdentityMismatch(
  addon: AddonCandidate,
  reported: ReportedAddonIdentity,
  expected: ExpectedAddonIdentity,
): string | undefined {
  const versionOk = expected.version === undefined || reported.version === expected.version;
  if (versionOk && reported.abi === expected.abi) return undefined;
  const from = addon.origin === 'package' ? `prebuilt package ${addon.packageName}` : addon.origin;
  const ours = `llamad ${expected.version ?? '(unknown version)'} (ABI ${expected.abi})`;
  const fix =
    addon.origin === 'package'
      ? `install the matching one with \`npm install ${addon.packageName}@${expected.version ?? 'latest'}\`, or ` +
        'build the addon from source with `npx llamad build`'
      : 'rebuild it with `npx llamad build` (`npm run build:native` in a checkout), or reinstall llamad';
  return (
    `native addon at ${addon.path} (${from}) reports ${shown(reported.version, 'version')}, ` +
    `${shown(reported.abi, 'ABI')}, but this JavaScript is ${ours}: ${fix}`
  );
}
