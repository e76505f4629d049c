import { stat } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { InvalidRequestError, ModelNotFoundError } from '../common/errors';
import {
  blobReference,
  expandHome,
  looksLikePath,
  parseQuantizeType,
  QUANTIZABLE_SOURCES,
  requireDigest,
} from './create-support';
import { GgufFile, modelDetails } from './gguf';
import { MediaType } from './manifest';
import { CreateDraft, SERVER_PATH_REFUSED_MESSAGE } from './model-create.types';
import { ModelName } from './model-name';
import type { ModelResolverService } from './model-resolver.service';
import type { ModelStore } from './model-store';

/**
 * The draft model of /api/create (speculative decoding; reference/ollama-api.md §3.9 `draft_files`/`draft_quantize`,
 * §10.5 `DRAFT`): finding and checking the GGUF before any progress is streamed. Ollama's CLI turns `DRAFT <path>` into
 * `draft_files` (server/create.go `convertDraftModelFromFiles`); this daemon parses Modelfiles itself, so DRAFT may
 * also name an uploaded blob (`@sha256:…`) or an existing local model (its weights become the draft).
 */

/** Ollama's 400 for `draft_quantize` without a draft (server/create.go; the CLI flag's name kept). */
export const DRAFT_QUANTIZE_NEEDS_DRAFT_MESSAGE = '--draft-quantize requires a DRAFT model';

/** What the draft checks need from the planner. */
export interface DraftLookup {
  store: ModelStore;
  resolver: ModelResolverService;
  /** Reads a GGUF that is to become a layer; @throws InvalidRequestError when it is not GGUF or unreadable. */
  readCreateGguf(path: string, label: string): Promise<GgufFile>;
}

/**
 * A Modelfile `DRAFT` value → the draft to store: an uploaded blob (`@sha256:…`, `sha256:…`); for a local requester a
 * GGUF file (`~` expanded, relative to the daemon's working directory); else an existing model's weights blob.
 * @param local whether the requester may name server files (else path-like values get SERVER_PATH_REFUSED_MESSAGE
 *   without the path being looked at).
 * @throws InvalidRequestError blob not found, `DRAFT file "<v>" does not exist`, not GGUF, an invalid model name;
 *   ModelNotFoundError for an unknown model.
 */
export async function resolveDraftValue(value: string, local: boolean, lookup: DraftLookup): Promise<CreateDraft> {
  const digest = blobReference(value);
  if (digest) return draftBlob(digest, value, lookup);
  if (local) {
    const path = resolvePath(expandHome(value));
    const info = await stat(path).catch(() => null);
    if (info?.isFile()) {
      return { source: { kind: 'file', path }, label: value, gguf: await lookup.readCreateGguf(path, `"${value}"`) };
    }
    if (looksLikePath(value) || info) throw new InvalidRequestError(`DRAFT file "${value}" does not exist`);
  } else if (looksLikePath(value)) {
    throw new InvalidRequestError(SERVER_PATH_REFUSED_MESSAGE);
  }
  if (!ModelName.parse(value)) throw new InvalidRequestError(`invalid DRAFT: "${value}" is not a model name`);
  const model = await lookup.resolver.resolve(value, (n) => ModelNotFoundError.notFoundMessage(n.toShortString()));
  const blob = model.manifest.layers.find((l) => l.mediaType === MediaType.MODEL)!;
  return draftBlob(blob.digest, value, lookup);
}

/**
 * The JSON form's `draft_files` (file name → digest of an uploaded blob) → the draft; undefined for an empty map.
 * @throws InvalidRequestError `invalid digest format`, `only one draft model file is supported`, blob not found,
 *   not GGUF.
 */
export async function resolveDraftFiles(
  files: Record<string, string> | undefined,
  lookup: DraftLookup,
): Promise<CreateDraft | undefined> {
  const entries = Object.entries(files ?? {});
  if (entries.length === 0) return undefined;
  if (entries.length !== 1) throw new InvalidRequestError('only one draft model file is supported', 'draft_files');
  const [fileName, value] = entries[0];
  return draftBlob(requireDigest(value, 'draft_files'), fileName, lookup);
}

/**
 * Adds `draft_quantize` to a draft, as Ollama's createModel does for the draft layer: the draft must be unquantized
 * (F16/BF16/F32); a draft already of the target type is stored as is.
 * @throws InvalidRequestError DRAFT_QUANTIZE_NEEDS_DRAFT_MESSAGE without a draft, `unsupported quantization type …`,
 *   `draft quantization requires an unquantized draft model, got <type>`.
 */
export function withDraftQuantize(
  draft: CreateDraft | undefined,
  quantize: string | undefined,
): CreateDraft | undefined {
  if (!quantize) return draft;
  if (!draft) throw new InvalidRequestError(DRAFT_QUANTIZE_NEEDS_DRAFT_MESSAGE, 'draft_quantize');
  const type = parseQuantizeType(quantize);
  const from = modelDetails(draft.gguf).fileType.toUpperCase();
  if (!QUANTIZABLE_SOURCES.includes(from)) {
    throw new InvalidRequestError(
      `draft quantization requires an unquantized draft model, got ${from}`,
      'draft_quantize',
    );
  }
  return from === type ? draft : { ...draft, quantize: { type, from } };
}

/** An uploaded (or stored) blob as the draft. @throws InvalidRequestError `blob "sha256:…" not found`, not GGUF. */
async function draftBlob(digest: string, label: string, lookup: DraftLookup): Promise<CreateDraft> {
  const size = await lookup.store.blobSize(digest);
  if (size === null) throw new InvalidRequestError(`blob "${digest}" not found`);
  const gguf = await lookup.readCreateGguf(lookup.store.blobPath(digest), `blob "${digest}"`);
  return { source: { kind: 'blob', digest, size }, label, gguf };
}
