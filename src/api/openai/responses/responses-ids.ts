import { randomBytes } from 'node:crypto';

/** Id prefixes of the Responses API: responses, message / reasoning / function-call items, call ids. */
export type ResponsesIdPrefix = 'resp' | 'msg' | 'rs' | 'fc' | 'call';

/** A fresh id `<prefix>_<24 lowercase hex>`: `resp_…`, `msg_…`, `rs_…`, `fc_…`, `call_…` (reference §12.6). */
export function responsesId(prefix: ResponsesIdPrefix): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}
