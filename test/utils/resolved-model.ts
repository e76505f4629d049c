import type { ResolvedModel } from '../../src/models';
import type { ChatCommand } from '../../src/generation/generation.types';

/**
 * The fields of a ResolvedModel the generation stages read, for a model `fake:latest` with no template, messages or
 * parameters and the `completion` capability; `overrides` replace any of them (e.g. `template`, `capabilities`).
 */
export function fakeResolvedModel(overrides: Partial<ResolvedModel> = {}): ResolvedModel {
  return {
    name: { toFullString: () => 'registry.ollama.ai/library/fake:latest' },
    shortName: 'fake:latest',
    manifestDigest: 'd1',
    messages: [],
    params: {},
    capabilities: ['completion'],
    facts: {},
    ...overrides,
  } as unknown as ResolvedModel;
}

/** A /api/chat command for the model `fake` with one user message `Hi` and no options; `overrides` replace fields. */
export function fakeChatCommand(overrides: Partial<ChatCommand> = {}): ChatCommand {
  return {
    model: 'fake',
    messages: [{ role: 'user', content: 'Hi' }],
    options: {},
    startedAt: process.hrtime.bigint(),
    ...overrides,
  };
}
