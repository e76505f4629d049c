import { JsonSchema, obj, oneOfStr, str } from './json-schema';

/** Component schemas of the operational routes (GET /health, GET /ready). */
export const OPERATIONS_SCHEMAS: Record<string, JsonSchema> = {
  HealthStatus: obj({ status: oneOfStr('ok') }, ['status'], { description: 'The daemon is alive.' }),
  ReadyStatus: obj(
    {
      status: oneOfStr('ok', 'unavailable'),
      error: str('Why the daemon cannot serve (503 only): the model store or the native addon.'),
    },
    ['status'],
    { description: 'Whether the daemon can serve requests.' },
  ),
};
