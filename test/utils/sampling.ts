// Sampling presets of the addon's NativeSamplingParams, shared by the native tests and the bench.
import type { NativeSamplingParams } from '../../binding';

/** Greedy sampling with every other stage disabled. */
export const GREEDY: NativeSamplingParams = {
  temperature: 0,
  topK: 0,
  topP: 1,
  minP: 0,
  typicalP: 1,
  repeatPenalty: 1,
  repeatLastN: 64,
  presencePenalty: 0,
  frequencyPenalty: 0,
  seed: -1,
};
