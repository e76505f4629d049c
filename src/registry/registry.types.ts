/** One progress record of pull/push (seed "Progress record"; reference/ollama-api.md §6.4, spec strings). */
export interface RegistryProgress {
  /** `pulling manifest`, `pulling layer <short_id>`, `retrieving manifest`, `pushing layer <short_id>`, `success`. */
  status: string;
  /** `sha256:<hex>` on layer records. */
  digest?: string;
  /** Layer size in bytes, on layer records. */
  total?: number;
  /** Bytes transferred so far (resumed bytes included), on layer records. */
  completed?: number;
}

/** A streamed record on the wire: the progress plus `done` (true only on `success`). */
export interface RegistryProgressWire extends RegistryProgress {
  done: boolean;
}

/** Maps a progress record to the wire (`done` true only on the final `success`). */
export function toRegistryProgressWire(p: RegistryProgress): RegistryProgressWire {
  return { ...p, done: p.status === 'success' };
}
