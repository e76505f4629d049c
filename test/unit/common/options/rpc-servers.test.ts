import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkRpcAllowed, RPC_NOT_ALLOWED_MESSAGE } from '../../../../src/common/options';

describe('checkRpcAllowed (PARAMETER rpc against LLAMAD_RPC_SERVERS)', () => {
  const allowed = ['10.0.0.5:50052', 'Worker.LAN:50052'];

  it('accepts no rpc, `none` ([]) and listed workers (host names case-insensitively)', () => {
    checkRpcAllowed(undefined, []);
    checkRpcAllowed([], []);
    checkRpcAllowed(['10.0.0.5:50052'], allowed);
    checkRpcAllowed(['worker.lan:50052', '10.0.0.5:50052'], allowed);
  });

  it('refuses any unlisted worker with one fixed text', () => {
    for (const servers of [['10.0.0.6:50052'], ['10.0.0.5:50052', 'evil.example:1'], ['10.0.0.5:50053'], [5]]) {
      assert.throws(
        () => checkRpcAllowed(servers, allowed),
        (err: Error) => err.message === RPC_NOT_ALLOWED_MESSAGE,
      );
    }
    assert.throws(() => checkRpcAllowed(['10.0.0.5:50052'], []), { message: RPC_NOT_ALLOWED_MESSAGE });
  });
});
