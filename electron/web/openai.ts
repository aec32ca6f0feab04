// The OpenAI-compatible endpoints of the web host: GET /v1/models and POST /v1/chat/completions
// (streaming with server-sent events, or not). The app core answers them (OpenAiBackend); this file only
// speaks the protocol: request validation, the response and chunk shapes, OpenAI-style error bodies.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';

import { ChatCompletionRequest, type OpenAiBackend } from '../api/openai.ts';
import { statusOfCode } from './http-error.ts';

/** An error in OpenAI's shape: { error: { message, type, param, code } }. */
export class OpenAiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = 'invalid_request_error',
    readonly param: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
  body() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

export function sendOpenAiError(res: ServerResponse, e: unknown) {
  if (e instanceof OpenAiError) return sendJson(res, e.status, e.body());
  const err = e as { code?: unknown; message?: unknown };
  // Errors from the core keep their code and get the status the rest of the web host gives it: 4xx for
  // what the caller can change (an unknown or unsupported model, a prompt too long), 5xx for our failures.
  const code = typeof err?.code === 'string' ? err.code : null;
  const status = code ? statusOfCode(code) : 500;
  const message = typeof err?.message === 'string' ? err.message : String(e);
  sendJson(
    res,
    status,
    new OpenAiError(status, message, status >= 500 ? 'server_error' : 'invalid_request_error', null, code).body(),
  );
}

export async function handleModels(res: ServerResponse, backend: OpenAiBackend) {
  const data = await backend.listModels();
  sendJson(res, 200, { object: 'list', data: data.map((m) => ({ object: 'model', ...m })) });
}

export async function handleChatCompletions(
  _req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  backend: OpenAiBackend,
  /** Aborted when the server stops: the answer ends as if the client had gone. */
  stopping?: AbortSignal,
) {
  const parsed = ChatCompletionRequest.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new OpenAiError(
      400,
      `invalid request: ${issue.path.join('.') || 'body'}: ${issue.message}`,
      'invalid_request_error',
      issue.path.join('.') || null,
    );
  }
  const request = parsed.data;
  const id = `chatcmpl-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const abort = new AbortController();
  // A client that goes away stops the generation, and so does a server that stops.
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  const serverStops = () => abort.abort(new Error('the server is stopping: ask again once it is back'));
  if (stopping?.aborted) serverStops();
  stopping?.addEventListener('abort', serverStops, { once: true });

  if (!request.stream) {
    const r = await backend.complete(request, () => {}, abort.signal);
    sendJson(res, 200, {
      id,
      object: 'chat.completion',
      created,
      model: r.model,
      choices: [
        { index: 0, message: { role: 'assistant', content: r.text }, finish_reason: r.finishReason, logprobs: null },
      ],
      usage: {
        prompt_tokens: r.promptTokens,
        completion_tokens: r.completionTokens,
        total_tokens: r.promptTokens + r.completionTokens,
      },
    });
    return;
  }

  let started = false;
  const chunk = (delta: object, finish: string | null, model: string) =>
    `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, finish_reason: finish, logprobs: null }] })}\n\n`;
  const start = () => {
    if (started) return;
    started = true;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    res.write(chunk({ role: 'assistant', content: '' }, null, request.model));
  };
  try {
    const r = await backend.complete(
      request,
      (text) => {
        start();
        if (text) res.write(chunk({ content: text }, null, request.model));
      },
      abort.signal,
    );
    start();
    res.write(chunk({}, r.finishReason, r.model));
    res.write('data: [DONE]\n\n');
    res.end();
  } catch (e) {
    if (!started) throw e; // nothing sent yet: a normal error response
    // Mid-stream: report in the stream, as OpenAI's servers do, then end it.
    const err = e as { message?: string; code?: string };
    res.write(
      `data: ${JSON.stringify({ error: { message: err.message ?? String(e), type: 'server_error', param: null, code: err.code ?? null } })}\n\n`,
    );
    res.end();
  }
}
