import { Injectable } from '@nestjs/common';
import { ChatResponseWire, LlamadService } from 'llamad';

/** One of the host's own services: it chats through the facade, without HTTP, and stops when it has enough. */
@Injectable()
export class DemoService {
  constructor(private readonly llm: LlamadService) {}

  /** The first `max` chunks of a chat; leaving the loop cancels the generation and frees the model's slot. */
  async firstChunks(model: string, max: number): Promise<ChatResponseWire[]> {
    const chunks: ChatResponseWire[] = [];
    if (max <= 0) return chunks;
    const chat = this.llm.chat({
      model,
      messages: [{ role: 'user', content: 'Tell me a long story.' }],
      options: { num_predict: 256, temperature: 0.8 },
    });
    for await (const chunk of chat) {
      chunks.push(chunk);
      if (chunks.length >= max) break;
    }
    return chunks;
  }
}
