// Ollama `api.PullRequest` / `api.PushRequest` (api/types.go) — wire names kept exactly.
// Spec: seed §4 "POST /api/pull", "POST /api/push"; details: reference/ollama-api.md §3.13, §3.14.
import { ApiSchema } from '@nestjs/swagger';
import { GoBool, GoString } from '../../../common/validation';

/** Body of POST /api/pull and POST /api/push. */
@ApiSchema({ name: 'PullRequest' })
export class RegistryRequestDto {
  static readonly goTypeName = 'api.PullRequest';

  /** `[host/][namespace/]model[:tag]`; plain-HTTP registries need `insecure: true`. */
  @GoString('PullRequest', { description: '`[host/][namespace/]model[:tag]`.' }) model?: string;
  /** Deprecated alias of `model` (ollama-js sends it). */
  @GoString('PullRequest', { deprecated: true }) name?: string;
  /** Use `http://` instead of `https://` for the registry. */
  @GoBool('PullRequest', { description: 'Plain HTTP to the registry.' }) insecure?: boolean;
  /** Default true: NDJSON progress records; false: one final `{"status":"success"}`. */
  @GoBool('PullRequest', { description: 'Default true: NDJSON progress; false: one `{"status":"success"}`.' })
  stream?: boolean;
  /** Accepted and ignored, like Ollama (credentials come from OLLAMA_REGISTRY_AUTH / registry-auth.json). */
  @GoString('PullRequest') username?: string;
  @GoString('PullRequest') password?: string;
}
