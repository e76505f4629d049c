import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { eventFrame, maySee } from '../../../../src/api/ollama/events.controller';
import type { ModelEvent } from '../../../../src/observability/model-events';

function event(over: Partial<ModelEvent> = {}): ModelEvent {
  return {
    type: 'load.start',
    model: 'llama3:latest',
    id: 'abc-1',
    seq: 1,
    at: Date.UTC(2026, 0, 2, 3, 4, 5),
    ...over,
  };
}

describe('GET /api/events: frames and who sees what', () => {
  it('frames one event as id, event and one line of JSON with model and time first', () => {
    assert.equal(
      eventFrame(event({ type: 'load.progress', data: { progress: 0.5 }, principal: 'key:secret' })),
      'id: abc-1\nevent: load.progress\ndata: {"model":"llama3:latest","time":"2026-01-02T03:04:05.000Z","progress":0.5}\n\n',
    );
  });

  it('without a policy (no keys, or an admin) every event is visible', () => {
    assert.equal(maySee({ principal: 'anonymous' }, event()), true);
    assert.equal(maySee({ principal: 'anonymous' }, event({ type: 'pull.progress', principal: 'key:1' })), true);
    assert.equal(maySee({ principal: 'key:2', policy: { role: 'admin' } }, event({ principal: 'key:1' })), true);
  });

  it('a user sees the models of its list only, and work it started itself', () => {
    const user = { principal: 'key:u', policy: { role: 'user' as const, models: ['llama3*'] } };
    assert.equal(maySee(user, event()), true);
    assert.equal(maySee(user, event({ model: 'secret:latest' })), false);
    assert.equal(maySee(user, event({ model: '/blobs/sha256-0' })), false, 'a runner named by its path');
    assert.equal(maySee(user, event({ type: 'create.step', principal: 'key:admin' })), false);
    assert.equal(maySee(user, event({ type: 'create.step', principal: 'key:u' })), true);
    const all = { principal: 'key:v', policy: { role: 'user' as const } };
    assert.equal(maySee(all, event({ model: 'secret:latest' })), true);
    assert.equal(maySee(all, event({ type: 'pull.progress', principal: 'key:admin' })), false);
  });
});
