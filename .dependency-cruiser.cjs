/**
 * The layers of src/ (docs/architecture.md "Layers"; ARCHITECTURE.md §14), checked by `npm run lint:deps` (part of
 * `npm run check`). Top to bottom:
 *   composition   src/main.ts, src/app.*.ts, src/llamad.module.ts, src/index.ts   (nothing imports them)
 *   surfaces      cli/, api/ (with LlamadService, Ollama's dialect as a service), openapi/, operations/, ui/
 *   domain        generation/ → scheduler/ → runner/;  registry/ → models/ → templates/
 *   platform      native/, security/, observability/ (hooks, logs, request context)
 *   base          config/, common/
 * A file imports only from its own folder's layer or lower ones; a type two layers share lives in the lower one.
 */
const COMPOSITION = '^src/(main|app\\.[a-z.-]+|llamad\\.module|index)\\.ts$';
const SURFACES = '^src/(cli|api|openapi|operations|ui)/';
const DOMAIN = '^src/(generation|scheduler|runner|registry|models|templates)/';
const PLATFORM = '^src/(native|security|observability)/';

/** A rule: files matching `from` must not import files matching `to`. */
function forbid(name, comment, from, to) {
  return { name, comment, severity: 'error', from: { path: from }, to: { path: to } };
}

module.exports = {
  forbidden: [
    {
      name: 'no-cycle',
      comment: 'No import cycles in src/ (type-only imports count too: they tie the layers together all the same).',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    forbid(
      'composition-on-top',
      'Nothing below the composition root imports it.',
      `^src/(?!(main|app\\.[a-z.-]+|llamad\\.module|index)\\.ts$)`,
      COMPOSITION,
    ),
    forbid(
      'cli-over-http',
      'The CLI speaks HTTP to the daemon: no services, scheduler or store.',
      '^src/cli/',
      `${DOMAIN}|^src/(api|operations)/`,
    ),
    forbid('domain-below-surfaces', 'The domain never sees HTTP surfaces.', DOMAIN, `${SURFACES}|${COMPOSITION}`),
    forbid(
      'generation-order',
      'generation/ sits above scheduler/, runner/ and models/, never below registry/.',
      '^src/generation/',
      '^src/registry/',
    ),
    forbid(
      'scheduler-below-generation',
      'The scheduler leases runners; it knows no prompts.',
      '^src/scheduler/',
      '^src/(generation|registry)/',
    ),
    forbid(
      'runner-at-the-bottom-of-inference',
      'A runner is one loaded model: it knows no scheduler, prompts, store or templates (a process boundary sits here).',
      '^src/runner/',
      '^src/(generation|scheduler|registry|models|templates)/',
    ),
    forbid(
      'registry-over-models',
      'The registry moves models; it does not run them.',
      '^src/registry/',
      '^src/(generation|scheduler|runner)/',
    ),
    forbid(
      'models-below-registry',
      'The store knows nothing of the registry or inference.',
      '^src/models/',
      '^src/(generation|scheduler|runner|registry)/',
    ),
    forbid(
      'templates-leaf',
      'The Go template engine depends on nothing of the domain or platform.',
      '^src/templates/',
      `^src/(generation|scheduler|runner|registry|models)/|${PLATFORM}`,
    ),
    forbid(
      'platform-below-domain',
      'native/, security/ and observability/ serve the domain; they never reach up.',
      PLATFORM,
      `${DOMAIN}|${SURFACES}|${COMPOSITION}`,
    ),
    forbid(
      'base-at-the-bottom',
      'config/ and common/ import nothing else of src/.',
      '^src/(config|common)/',
      `${PLATFORM}|${DOMAIN}|${SURFACES}|${COMPOSITION}`,
    ),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules|vendor|build)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    combinedDependencies: false,
  },
};
