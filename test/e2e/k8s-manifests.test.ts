// The Kubernetes manifests of deploy/k8s (base, rpc, gateway), validated without a cluster by scripts/k8s-validate.mjs:
// each kustomization renders with kubectl, every object passes kubectl's client dry-run and its JSON schema (the
// Kubernetes kinds from kubernetes-models; InferencePool and HTTPRoute from their CRDs, deploy/k8s/schemas).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../src/config';
import { missingPrograms } from '../utils/programs';

describe('deploy/k8s manifests', { skip: missingPrograms('kubectl') }, () => {
  it('every kustomization renders and validates, the gateway overlay against the CRD schemas', () => {
    const run = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts', 'k8s-validate.mjs')], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 300_000,
    });
    const output = `${run.stdout}\n${run.stderr}`;
    assert.equal(run.status, 0, output);
    for (const overlay of ['base', 'rpc', 'gateway']) assert.match(output, new RegExp(`ok +deploy/k8s/${overlay}:`));
    assert.match(output, /InferencePool\/llamad: schema \(CRD openAPIV3Schema\)/);
    assert.match(output, /HTTPRoute\/llamad: schema \(CRD openAPIV3Schema\)/);
    assert.match(output, /all checks passed/);
  });
});
