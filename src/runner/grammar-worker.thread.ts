/**
 * The body of a grammar worker thread (grammar-worker.ts): loads the addon file it is given (`workerData.addonPath`,
 * the same file the process loaded) and answers `{ id, schema }` messages with `{ id, grammar }` (llama.cpp
 * json_schema_to_grammar) or `{ id, error: { code, message } }` (the addon's LLAMA_* code). One job at a time.
 */
import { parentPort, workerData } from 'node:worker_threads';

interface GrammarBinding {
  jsonSchemaToGrammar(schema: string): string;
}

const port = parentPort;
if (port) {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const binding = require((workerData as { addonPath: string }).addonPath) as GrammarBinding;
  port.on('message', (job: { id: number; schema: string }) => {
    try {
      port.postMessage({ id: job.id, grammar: binding.jsonSchemaToGrammar(job.schema) });
    } catch (err) {
      const e = err as { code?: unknown; message?: unknown };
      port.postMessage({
        id: job.id,
        error: { code: typeof e.code === 'string' ? e.code : undefined, message: String(e.message ?? err) },
      });
    }
  });
}
