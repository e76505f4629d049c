// Ollama `api.ShowRequest` (api/types.go) — wire names kept exactly.
// Spec: seed §4 "POST /api/show"; details: reference/ollama-api.md §3.8.
import { ApiSchema } from '@nestjs/swagger';
import { GoBool, GoMap, GoString } from '../../../common/validation';

const S = 'ShowRequest';

/** Body of POST /api/show. */
@ApiSchema({ name: 'ShowRequest' })
export class ShowRequestDto {
  static readonly goTypeName = 'api.ShowRequest';

  @GoString(S) model?: string;
  /** Deprecated alias of `model`. */
  @GoString(S, { deprecated: true }) name?: string;
  /** Overrides SYSTEM in the output. */
  @GoString(S) system?: string;
  /** Deprecated, ignored. */
  @GoString(S, { deprecated: true }) template?: string;
  /** `true` returns long arrays of model_info in full. */
  @GoBool(S, { description: 'Long arrays of model_info in full.' }) verbose?: boolean;
  /** Merged into the PARAMETER lines of the output. */
  @GoMap(S) options?: Record<string, unknown>;
}
