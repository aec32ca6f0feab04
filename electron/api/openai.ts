// The OpenAI-compatible API as the app core answers it (services/openai-service.ts) and the web host speaks it
// (web/openai.ts): the request a chat completion takes, with Folio's one extension (document_id), and what the
// core gives back. The transport's shapes (responses, chunks, errors) stay in web/openai.ts.
import { z } from 'zod';

import { MAX_GENERATE_TOKENS } from './contract.ts';
import { MAX_CHAT_DOCUMENTS } from '../shared/limits.ts';

const ContentPart = z.object({ type: z.string(), text: z.string().optional() }).passthrough();
const ChatMessage = z
  .object({
    role: z.enum(['system', 'developer', 'user', 'assistant']),
    content: z.union([z.string(), z.array(ContentPart), z.null()]),
  })
  .passthrough();

const MaxTokens = z
  .number()
  .int()
  .min(1)
  .max(MAX_GENERATE_TOKENS, `at most ${MAX_GENERATE_TOKENS} tokens can be generated at once`);

export const ChatCompletionRequest = z
  .object({
    model: z.string().min(1),
    messages: z.array(ChatMessage).min(1),
    stream: z.boolean().optional(),
    temperature: z.number().min(0).max(2).optional(),
    top_p: z.number().gt(0).max(1).optional(),
    max_tokens: MaxTokens.optional(),
    /** OpenAI's newer name of max_tokens. */
    max_completion_tokens: MaxTokens.optional(),
    seed: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    stop: z.union([z.string(), z.array(z.string()).max(4)]).optional(),
    /** Folio's extension: answer over a stored, compressed document (an id from the documents API)... */
    document_id: z.string().min(1).optional(),
    /** ...or over a set of them, read side by side in this order (their saved caches assembled, none read again). */
    document_ids: z.array(z.string().min(1)).min(1).max(MAX_CHAT_DOCUMENTS).optional(),
  })
  .passthrough()
  .refine((r) => !(r.document_id && r.document_ids), 'give document_id or document_ids, not both');
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>;

/** The text of a message's content (string or text parts). */
export function contentText(content: z.infer<typeof ChatMessage>['content']): string {
  if (content === null) return '';
  if (typeof content === 'string') return content;
  return content.map((p) => (p.type === 'text' ? (p.text ?? '') : '')).join('');
}

export interface CompletionResult {
  model: string;
  text: string;
  finishReason: 'stop' | 'length';
  promptTokens: number;
  completionTokens: number;
}

export interface OpenAiBackend {
  listModels(): Promise<{ id: string; created: number; owned_by: string }[]>;
  complete(req: ChatCompletionRequest, onDelta: (text: string) => void, signal: AbortSignal): Promise<CompletionResult>;
}
