#!/usr/bin/env node
// Validates the Kubernetes manifests of deploy/k8s without a cluster:
//   1. `kubectl kustomize` renders each kustomization (base, rpc, gateway);
//   2. `kubectl apply --dry-run=client` reads every object. kubectl needs an API server's discovery documents to map
//      kinds to resources even in client dry-run, so a stub server on loopback answers discovery (and 404 for every
//      object: nothing exists yet) — it knows nothing else, so kubectl's OpenAPI check is off (--validate=false);
//   3. each object against the Kubernetes JSON schemas of the npm package `kubernetes-models` (types, enums, required
//      fields; installed into .cache/k8s-validate on first use). Unknown fields are not reported by these schemas;
//      the custom resources of the gateway overlay (InferencePool, HTTPRoute) against the openAPIV3Schema of their
//      CRDs (deploy/k8s/schemas, with their source) with ajv, where an unknown field IS reported (the API server would
//      prune it silently); the CRDs' CEL rules (x-kubernetes-validations) are not evaluated;
//   4. every container's image was set by the kustomization's `images:` (no bare `llamad` placeholder left).
// Usage: node scripts/k8s-validate.mjs   (needs kubectl: Debian's kubernetes-client, or any other)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const KUSTOMIZATIONS = ['deploy/k8s/base', 'deploy/k8s/rpc', 'deploy/k8s/gateway'];
const VALIDATOR_DIR = join(root, '.cache', 'k8s-validate');
const VALIDATOR_PACKAGES = ['kubernetes-models@5.1.0', 'yaml@2.8.1', 'ajv@8.17.1'];
/** CRD schemas of custom resources (deploy/k8s/schemas/README.md says where they come from). */
const CRD_SCHEMAS_DIR = join(root, 'deploy', 'k8s', 'schemas');

/** The kinds the manifests use: group/version → resources (kind, plural name, namespaced). */
const RESOURCES = {
  v1: [
    ['Secret', 'secrets'],
    ['Service', 'services'],
    ['PersistentVolumeClaim', 'persistentvolumeclaims'],
    ['ConfigMap', 'configmaps'],
  ],
  'apps/v1': [
    ['Deployment', 'deployments'],
    ['StatefulSet', 'statefulsets'],
  ],
  'networking.k8s.io/v1': [['NetworkPolicy', 'networkpolicies']],
  'inference.networking.k8s.io/v1': [['InferencePool', 'inferencepools']],
  'gateway.networking.k8s.io/v1': [['HTTPRoute', 'httproutes']],
};

let failures = 0;
const log = (msg) => process.stdout.write(`${msg}\n`);
function failed(msg) {
  failures++;
  log(`FAIL ${msg}`);
}

function kubectl(args, opts = {}) {
  return spawnSync('kubectl', args, { encoding: 'utf8', ...opts });
}

function resourceList(groupVersion) {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    resources: RESOURCES[groupVersion].map(([kind, name]) => ({
      name,
      singularName: kind.toLowerCase(),
      namespaced: true,
      kind,
      verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    })),
  };
}

/** The stub API server: discovery documents, 404 for everything else. */
function stubServer() {
  const groups = Object.keys(RESOURCES).filter((gv) => gv.includes('/'));
  const routes = {
    '/version': { major: '1', minor: '32', gitVersion: 'v1.32.0', platform: 'linux/amd64' },
    '/api': { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] },
    '/apis': {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: groups.map((gv) => {
        const [name, version] = gv.split('/');
        const v = { groupVersion: gv, version };
        return { name, versions: [v], preferredVersion: v };
      }),
    },
    '/api/v1': resourceList('v1'),
    ...Object.fromEntries(groups.map((gv) => [`/apis/${gv}`, resourceList(gv)])),
  };
  return createServer((req, res) => {
    const path = new URL(req.url, 'http://stub').pathname;
    const body = routes[path] ?? {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'NotFound',
      code: 404,
      message: `${path} not found`,
    };
    res.writeHead(routes[path] ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
}

async function loadValidator() {
  const installed = VALIDATOR_PACKAGES.every((spec) =>
    existsSync(join(VALIDATOR_DIR, 'node_modules', spec.slice(0, spec.lastIndexOf('@')), 'package.json')),
  );
  if (!installed) {
    mkdirSync(VALIDATOR_DIR, { recursive: true });
    writeFileSync(join(VALIDATOR_DIR, 'package.json'), '{"private":true}\n');
    const r = spawnSync('npm', ['install', '--silent', '--no-audit', '--no-fund', ...VALIDATOR_PACKAGES], {
      cwd: VALIDATOR_DIR,
      stdio: 'inherit',
    });
    if (r.status !== 0) return null;
  }
  const req = createRequire(join(VALIDATOR_DIR, 'package.json'));
  const yaml = await import(pathToFileURL(req.resolve('yaml')).href);
  const modelsDir = dirname(req.resolve('kubernetes-models/package.json'));
  const { default: Ajv } = await import(pathToFileURL(req.resolve('ajv')).href);
  return { yaml, modelsDir, crds: crdValidators(Ajv) };
}

/**
 * One ajv validator per custom resource (`apiVersion kind` → validate) from deploy/k8s/schemas/*.json. Objects of a
 * schema that list their properties are closed (additionalProperties false, unless the schema says otherwise or
 * preserves unknown fields), so a misspelt field fails instead of being pruned by the API server; the `x-kubernetes-*`
 * keywords and formats are ignored.
 */
function crdValidators(Ajv) {
  const close = (node) => {
    if (Array.isArray(node)) return node.map(close);
    if (!node || typeof node !== 'object') return node;
    const out = Object.fromEntries(
      Object.entries(node).map(([k, v]) => [k, k === 'properties' ? mapValues(v) : close(v)]),
    );
    const open = out['x-kubernetes-preserve-unknown-fields'] === true || 'additionalProperties' in out;
    if (out.properties && !open) out.additionalProperties = false;
    return out;
  };
  const mapValues = (props) => Object.fromEntries(Object.entries(props).map(([k, v]) => [k, close(v)]));
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  const validators = new Map();
  for (const file of readdirSync(CRD_SCHEMAS_DIR).filter((f) => f.endsWith('.json'))) {
    const crd = JSON.parse(readFileSync(join(CRD_SCHEMAS_DIR, file), 'utf8'));
    validators.set(`${crd.group}/${crd.version} ${crd.kind}`, ajv.compile(close(crd.schema)));
  }
  return validators;
}

function spawnAsync(cmd, args) {
  return new Promise((res) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => res({ code, stdout, stderr }));
  });
}

async function main() {
  if (kubectl(['version', '--client']).status !== 0) {
    log('kubectl not found: apt-get install -y kubernetes-client');
    process.exit(1);
  }
  const work = mkdtempSync(join(tmpdir(), 'llamad-k8s-'));
  const server = stubServer();
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const kubeconfig = join(work, 'kubeconfig');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'stub', cluster: { server: `http://127.0.0.1:${server.address().port}` } }],
      users: [{ name: 'stub', user: {} }],
      contexts: [{ name: 'stub', context: { cluster: 'stub', user: 'stub', namespace: 'default' } }],
      'current-context': 'stub',
    }),
  );
  const validator = await loadValidator();
  if (!validator) failed('could not install the schema validator (kubernetes-models) from npm');

  for (const dir of KUSTOMIZATIONS) {
    const rendered = kubectl(['kustomize', join(root, dir)]);
    if (rendered.status !== 0) {
      failed(`${dir}: kubectl kustomize: ${rendered.stderr.trim()}`);
      continue;
    }
    const file = join(work, `${dir.replaceAll('/', '_')}.yaml`);
    writeFileSync(file, rendered.stdout);
    log(`ok   ${dir}: kubectl kustomize`);

    // spawnSync would block the stub server in this same process: run kubectl asynchronously.
    const args = ['--kubeconfig', kubeconfig, 'apply', '--dry-run=client', '--validate=false', '-f', file];
    const dry = await spawnAsync('kubectl', args);
    if (dry.code !== 0) failed(`${dir}: kubectl apply --dry-run=client: ${dry.stderr.trim()}`);
    else log(`ok   ${dir}: kubectl apply --dry-run=client\n${dry.stdout.trim().replace(/^/gm, '       ')}`);

    if (!validator) continue;
    for (const doc of validator.yaml.parseAllDocuments(rendered.stdout)) {
      const obj = doc.toJS();
      const [group, version] = obj.apiVersion.includes('/') ? obj.apiVersion.split('/') : ['', obj.apiVersion];
      const modPath = join(validator.modelsDir, ...(group ? [group] : []), version, `${obj.kind}.js`);
      const name = `${dir}: ${obj.kind}/${obj.metadata?.name}`;
      const crd = validator.crds.get(`${obj.apiVersion} ${obj.kind}`);
      if (crd) {
        if (crd(obj)) log(`ok   ${name}: schema (CRD openAPIV3Schema)`);
        else
          failed(
            `${name}: ${crd.errors.map((e) => `${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`).join('; ')}`,
          );
        continue;
      }
      if (!existsSync(modPath)) {
        failed(`${name}: no schema for ${obj.apiVersion} ${obj.kind}`);
        continue;
      }
      // Every container must get the image of the kustomization's `images:` (not the bare placeholder name).
      const containers = obj.spec?.template?.spec?.containers ?? [];
      for (const c of containers) if (!c.image?.includes('/')) failed(`${name}: container ${c.name} image ${c.image}`);
      const mod = await import(pathToFileURL(modPath).href);
      try {
        new mod[obj.kind](obj).validate();
        log(`ok   ${name}: schema (kubernetes-models)`);
      } catch (err) {
        failed(`${name}: ${err.message}`);
      }
    }
  }
  server.close();
  rmSync(work, { recursive: true, force: true });
  log(failures === 0 ? 'k8s manifests: all checks passed' : `k8s manifests: ${failures} check(s) failed`);
  process.exit(failures === 0 ? 0 : 1);
}

await main();
