/**
 * Mapping of a model name to registry URLs (Docker Registry v2 dialect, reference/ollama-api.md §6.1).
 * Pure functions: no I/O.
 */
import { InvalidRequestError, RegistryError } from '../common/errors';
import { ModelName } from '../models';

/** Where a model lives in a registry: base URL and repository path. */
export interface RegistryReference {
  name: ModelName;
  /** `https` by default, `http` when the request set `insecure: true`. */
  scheme: 'http' | 'https';
  /** Registry host, with `:port` when the name has one (e.g. `127.0.0.1:5000`). */
  host: string;
  /** `<namespace>/<model>`: the repository inside the registry. */
  repository: string;
  /** The tag (the manifest reference). */
  tag: string;
}

/**
 * Resolves the name given to /api/pull or /api/push (§6.1): `[scheme://][host/][namespace/]model[:tag]` with Ollama's
 * defaults. `insecure: true` selects plain HTTP; a name that explicitly says `http://` without `insecure` is refused.
 * @throws InvalidRequestError `invalid model name` for a name that does not parse.
 * @throws RegistryError `insecure protocol http` for an explicit `http://` name without `insecure`.
 */
export function resolveReference(input: string, insecure: boolean): RegistryReference {
  const name = ModelName.parse(input);
  if (!name) throw new InvalidRequestError('invalid model name', 'model');
  if (/^http:\/\//i.test(input) && !insecure) throw new RegistryError('insecure protocol http');
  return {
    name,
    scheme: insecure ? 'http' : 'https',
    host: name.host,
    repository: `${name.namespace}/${name.model}`,
    tag: name.tag,
  };
}

/** `GET|PUT {scheme}://{host}/v2/{ns}/{model}/manifests/{tag}`. */
export function manifestUrl(ref: RegistryReference): string {
  return `${ref.scheme}://${ref.host}/v2/${ref.repository}/manifests/${encodeURIComponent(ref.tag)}`;
}

/** `GET|HEAD {scheme}://{host}/v2/{ns}/{model}/blobs/{digest}` (digest as `sha256:<hex>`). */
export function blobUrl(ref: RegistryReference, digest: string): string {
  return `${ref.scheme}://${ref.host}/v2/${ref.repository}/blobs/${digest}`;
}

/** `POST {scheme}://{host}/v2/{ns}/{model}/blobs/uploads/` (starts an upload session). */
export function uploadsUrl(ref: RegistryReference): string {
  return `${ref.scheme}://${ref.host}/v2/${ref.repository}/blobs/uploads/`;
}

/**
 * The URL of an upload session from a response's `Docker-Upload-Location` (preferred, as Ollama) or `Location`
 * header, resolved against the request URL (registries may answer with a relative path).
 * @throws RegistryError when the registry sent neither header.
 */
export function uploadLocation(response: Response, requestUrl: string): URL {
  const location = response.headers.get('docker-upload-location') ?? response.headers.get('location');
  if (!location) throw new RegistryError('registry did not return an upload location', response.status);
  return new URL(location, requestUrl);
}

/** Short layer id used in progress statuses: the first 12 hex characters after `sha256:` (§6.4). */
export function shortId(digest: string): string {
  return digest.replace(/^sha256:/, '').slice(0, 12);
}
