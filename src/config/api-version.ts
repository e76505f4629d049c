/**
 * The Ollama API level this daemon implements, reported by /api/version. Clients compare it to decide which request
 * fields to send (reference/ollama-api.md §3.1, Appendix B); unknown fields are ignored anyway. The registry client
 * sends it in its User-Agent too, as Ollama does.
 */
export const OLLAMA_API_VERSION = '0.33.0';
