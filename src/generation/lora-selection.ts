import { InvalidRequestError } from '../common/errors';
import { ResolvedModel } from '../models';
import { RunnerLora } from '../runner';
import { LoraSelection } from './generation.types';

/** Most entries in one request's `lora` list. */
export const MAX_LORA_ENTRIES = 8;

/** Largest |scale| of a `lora` entry (llama-server sets no bound; a larger multiplier only produces noise). */
export const MAX_LORA_SCALE = 100;

/**
 * The adapters a model applies when the request names none: its Modelfile ADAPTER layers in order, each at scale 1,
 * reported under the model's name (a `FROM base` + `ADAPTER x` model runs on the base weights' runner with these).
 */
export function defaultLoras(model: ResolvedModel): RunnerLora[] {
  return model.adapterPaths.map((path) => ({ path, scale: 1, name: model.shortName }));
}

/**
 * Resolves a request's `lora` list (llama-server's per-request form, tools/server/README.md `lora`; plus `name`,
 * vLLM's adapter-by-model-name idea; beyond Ollama) against the requested model into the adapters of the generation
 * (RunnerRequest.loras). The rule:
 * - `selection` undefined → the model's own adapters at scale 1 ({@link defaultLoras}).
 * - Otherwise the list REPLACES the model's adapter set: adapters of the model that it does not list are not applied
 *   (llama-server gives unlisted adapters scale 0). An empty list = the base weights.
 * - `{id, scale}`: `id` indexes the requested model's own adapters (its ADAPTER layers in manifest order, as
 *   llama-server's ids index its `--lora` list), reported under the model's name.
 * - `{name, scale}`: `name` is another model (resolved by `resolveModel`, i.e. with the caller's model allow-list: an
 *   unlisted name fails exactly like a missing model) whose weights blob is the requested model's and which has
 *   adapters; all of its adapters are applied at `scale`, reported under its name (`ft2:latest`).
 * - Entries with scale 0 are dropped (not applied, so the generation shares the base weights' KV prefixes).
 * - The same adapter blob named twice (by two entries) is a 400: llama.cpp would add its delta twice.
 * Shape checks (exactly one of id/name, finite scale within ±{@link MAX_LORA_SCALE}, at most
 * {@link MAX_LORA_ENTRIES} entries) are the wire layer's (DTO validation); they are not repeated here.
 * @param model the requested model.
 * @param selection the request's `lora` (validated shape), or undefined when absent.
 * @param resolveModel resolves a model name as the `model` field is resolved (ModelsService.resolve).
 * @returns the adapters with their scales (scale ≠ 0), in the request's order.
 * @throws InvalidRequestError (400, param `lora`): `lora id <id> is out of range: <model> has <n> adapter(s)`;
 *   `lora "<name>" is not an adapter of <model>: …` (other weights, or no adapters); `lora names adapter … twice`.
 *   Whatever `resolveModel` throws for an unknown or hidden name (ModelNotFoundError, 404 in each dialect).
 */
export async function resolveLoras(
  model: ResolvedModel,
  selection: LoraSelection[] | undefined,
  resolveModel: (name: string) => Promise<ResolvedModel>,
): Promise<RunnerLora[]> {
  if (selection === undefined) return defaultLoras(model);
  const out: RunnerLora[] = [];
  const seen = new Map<string, string>();
  for (const entry of selection) {
    let adapters: RunnerLora[];
    let label: string;
    if (entry.name !== undefined) {
      label = `lora "${entry.name}"`;
      adapters = adaptersOfNamed(model, entry.name, await resolveModel(entry.name), entry.scale);
    } else {
      const id = entry.id ?? 0;
      label = `lora id ${id}`;
      const path = model.adapterPaths[id];
      if (path === undefined) {
        const n = model.adapterPaths.length;
        throw new InvalidRequestError(
          `lora id ${id} is out of range: ${model.shortName} has ${n} adapter${n === 1 ? '' : 's'}` +
            (n > 0 ? ` (ids 0..${n - 1})` : ''),
          'lora',
        );
      }
      adapters = [{ path, scale: entry.scale, name: model.shortName }];
    }
    for (const adapter of adapters) {
      const earlier = seen.get(adapter.path);
      if (earlier !== undefined) {
        throw new InvalidRequestError(`${label} names an adapter that ${earlier} already names`, 'lora');
      }
      seen.set(adapter.path, label);
      if (adapter.scale !== 0) out.push(adapter);
    }
  }
  return out;
}

/**
 * The adapters of the model named in a `lora` entry, checked against the requested model (same weights blob, has
 * adapters).
 * @throws InvalidRequestError `lora "<name>" is not an adapter of <model>: …`.
 */
function adaptersOfNamed(model: ResolvedModel, name: string, named: ResolvedModel, scale: number): RunnerLora[] {
  if (named.modelPath !== model.modelPath) {
    throw new InvalidRequestError(
      `lora "${name}" is not an adapter of ${model.shortName}: ${named.shortName} has other base weights`,
      'lora',
    );
  }
  if (named.adapterPaths.length === 0) {
    throw new InvalidRequestError(
      `lora "${name}" is not an adapter of ${model.shortName}: ${named.shortName} has no ADAPTER`,
      'lora',
    );
  }
  return named.adapterPaths.map((path) => ({ path, scale, name: named.shortName }));
}
