import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

/** Where the daemon serves the UI from (src/ui/web-ui.ts WEB_UI_ROOT): dist/ui of the package. */
const OUT_DIR = fileURLToPath(new URL('../dist/ui', import.meta.url));

// The web UI (docs/ui.md): Preact + Vite, relative URLs (the page lives at `<prefix>/ui/`), no inline scripts (the
// daemon's CSP has no 'unsafe-inline'), one hashed bundle per entry, no source maps shipped.
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  publicDir: false,
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: OUT_DIR,
    emptyOutDir: true,
    assetsDir: 'assets',
    sourcemap: false,
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    chunkSizeWarningLimit: 400,
  },
});
