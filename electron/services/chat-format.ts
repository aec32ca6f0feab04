// How a conversation over a document becomes text for the model, turn by turn (the chats, the OpenAI
// endpoint over a document and `folio chat` all go through conversation.ts, which uses this).
//
// The document is compressed once, as the prefix: the rendered system message carrying it. Every turn
// then appends only what is new: the whole conversation is rendered again and the part after the text the
// cache already holds is the next prompt. With the model's chat template (Jinja, rendered by
// @huggingface/jinja) that is the end of the previous answer (the end-of-turn marker the model stopped at,
// which generation does not feed back), the user's message and the assistant header. Models without a
// template get a plain format: the document, then "\n\nQuestion: ...\nAnswer:" turns. A chat in the
// completion style (what a base model can do) writes the text as typed after the document, and the model
// continues it (completionRenderer).
import { Template } from '@huggingface/jinja';

import { BASE_MODEL_MAX_TOKENS } from '../shared/chat-style.ts';

export type Role = 'system' | 'user' | 'assistant';
export interface Message {
  role: Role;
  content: string;
}

/** Renders a conversation; `addGenerationPrompt` ends it with the header of the assistant's answer. */
export type Renderer = (messages: Message[], addGenerationPrompt: boolean) => string;

/** The conversation cannot be continued in the cache (code CHAT_FORMAT). */
export class ChatFormatError extends Error {
  readonly code = 'CHAT_FORMAT';
}

/** A renderer for a Jinja chat template (llama.cpp's tokenizer.chat_template, Hugging Face's chat_template). */
export function templateRenderer(template: string, special: { bos: string; eos: string }): Renderer {
  let tpl: Template;
  try {
    tpl = new Template(template);
  } catch (e) {
    throw new ChatFormatError(`the model's chat template does not parse: ${(e as Error).message}`);
  }
  return (messages, addGenerationPrompt) => {
    try {
      return tpl.render({
        messages,
        bos_token: special.bos,
        eos_token: special.eos,
        add_generation_prompt: addGenerationPrompt,
      });
    } catch (e) {
      throw new ChatFormatError(`the model's chat template failed to render the conversation: ${(e as Error).message}`);
    }
  };
}

/** The format for models without a chat template: the system text (the document), then question/answer turns. */
export const plainRenderer: Renderer = (messages, addGenerationPrompt) => {
  let text = '';
  for (const m of messages) {
    if (m.role === 'system') text += m.content;
    else if (m.role === 'user') text += `\n\nQuestion: ${m.content}\nAnswer:`;
    else text += m.content; // the answer exactly as generated, right after "Answer:"
  }
  // The plain format always ends a user turn with the answer's header.
  void addGenerationPrompt;
  return text;
};

/**
 * The completion style over a format: the prefix (system message and document) as `base` renders it, then
 * each text as typed and each continuation as generated, nothing around them: the model continues the
 * document's text. A text follows the document (or the last continuation) after a space, as the next
 * sentence of its prose, unless it starts with its own whitespace (a new paragraph, typed), or the text
 * before it already ends with whitespace. Nothing is trimmed: a text ending in a space asks for what follows
 * it (a base model tokenizes " 7306" as a space and digits).
 */
export function completionRenderer(base: Renderer): Renderer {
  return (messages, _addGenerationPrompt) => {
    let text = base(
      messages.filter((m) => m.role === 'system'),
      false,
    );
    for (const m of messages) {
      if (m.role === 'system') continue;
      if (m.role === 'user' && !/^\s/.test(m.content) && !/\s$/.test(text)) text += ' ';
      text += m.content;
    }
    return text;
  };
}

/**
 * Where an answer ends besides the model's end of turn: a base model's (no chat template, or the completion
 * style) at a blank line, where it would go on to write the next question itself, and at BASE_MODEL_MAX_TOKENS
 * (it rarely ends on its own). A chat template's answer ends at its end-of-turn token.
 */
export function answerEnds(o: { template: boolean; style: 'chat' | 'completion' }): {
  stops: string[];
  maxTokens: number;
} {
  if (o.template && o.style === 'chat') return { stops: [], maxTokens: Number.POSITIVE_INFINITY };
  return { stops: o.style === 'chat' ? ['\n\n', '\nQuestion:'] : ['\n\n'], maxTokens: BASE_MODEL_MAX_TOKENS };
}

/** The system message's content: the optional instructions, then the document. */
export function systemContent(document: string, system?: string): string {
  return system !== undefined && system.trim() !== '' ? `${system}\n\n${document}` : document;
}

/** What the next turn appends to the cache (see Conversation.plan). */
export interface TurnPlan {
  /** The text to tokenize and prefill. */
  text: string;
  /** True when the template renders the previous answer differently from what the model generated (it trims
   * it, say): the cache goes back to where that answer began and `text` holds the answer as rendered. */
  dropLastAnswer: boolean;
  readonly messages: Message[];
  readonly cached: string;
}

/** The text side of a chat over one document: what the cache holds, what each turn appends. */
export class Conversation {
  readonly prefixText: string;
  private messages: Message[];
  /** The text the cache holds, as rendered or generated. */
  private cached: string;
  /** Length of `cached` before the last answer, or -1 when there is none. */
  private answerStart = -1;

  constructor(
    private readonly render: Renderer,
    system: string,
  ) {
    this.messages = [{ role: 'system', content: system }];
    this.prefixText = render(this.messages, false);
    if (this.prefixText === '')
      throw new ChatFormatError('the chat template rendered the system message (the document) as nothing');
    this.cached = this.prefixText;
  }

  /** The text the cache holds. */
  get text(): string {
    return this.cached;
  }

  get turns(): number {
    return this.messages.filter((m) => m.role === 'user').length;
  }

  /** The prompt of the next question; nothing changes until it is accepted. */
  plan(question: string): TurnPlan {
    const messages: Message[] = [...this.messages, { role: 'user', content: question }];
    const rendered = this.render(messages, true);
    if (rendered.startsWith(this.cached)) {
      return { text: rendered.slice(this.cached.length), dropLastAnswer: false, messages, cached: rendered };
    }
    if (this.answerStart >= 0) {
      const before = this.cached.slice(0, this.answerStart);
      if (rendered.startsWith(before))
        return { text: rendered.slice(before.length), dropLastAnswer: true, messages, cached: rendered };
    }
    const at = commonPrefix(rendered, this.cached);
    throw new ChatFormatError(
      `the chat template does not extend the text already in the cache: they differ at character ${at} ` +
        `(cache ${JSON.stringify(this.cached.slice(at, at + 40))}, template ${JSON.stringify(rendered.slice(at, at + 40))}); ` +
        '/reset starts a new conversation over the same document',
    );
  }

  /** The planned prompt is now in the cache. */
  accept(plan: TurnPlan): void {
    this.messages = plan.messages;
    this.cached = plan.cached;
    this.answerStart = -1;
  }

  /** The answer the cache now holds after the accepted prompt, as generated (end-of-generation token excluded). */
  answered(text: string): void {
    this.messages = [...this.messages, { role: 'assistant', content: text }];
    this.answerStart = this.cached.length;
    this.cached += text;
  }

  /** Back to the document alone. */
  reset(): void {
    this.messages = this.messages.slice(0, 1);
    this.cached = this.prefixText;
    this.answerStart = -1;
  }
}

function commonPrefix(a: string, b: string): number {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return i;
}

export type Tokenize = (text: string, opts: { addSpecial: boolean; parseSpecial: boolean }) => Int32Array;

/** What the tokens of the prefix need to know about BOS. */
export interface BosInfo {
  /** Token id of BOS (-1: none). */
  id: number;
  /** Whether the model's metadata asks for a BOS at the start. */
  add: boolean;
}

/** Where rendered text is tokenized: the prefix (`first`) or a later turn, in a template or the plain format. */
export interface TokenPlace {
  template: boolean;
  first: boolean;
  bos: BosInfo;
}

/**
 * How rendered text is tokenized. A template's text carries its special tokens as text (<|im_start|>, and
 * usually bos_token itself at the start), so they are parsed; a BOS is put in front of the prefix only when
 * the model wants one and the text does not already start with it, never twice (see needsBos). The plain
 * format's text is ordinary text: special-token text in a document or question stays text, and the prefix
 * gets BOS as the model says (as `folio compress` does).
 */
export function tokenizeOptions(o: TokenPlace): { addSpecial: boolean; parseSpecial: boolean } {
  return o.template ? { addSpecial: false, parseSpecial: true } : { addSpecial: o.first, parseSpecial: false };
}

/** Whether tokens of a template's text (tokenized with tokenizeOptions) still need the model's BOS in front. */
export function needsBos(tokens: ArrayLike<number>, o: TokenPlace): boolean {
  return o.template && o.first && o.bos.add && o.bos.id >= 0 && tokens[0] !== o.bos.id;
}

/** Tokens of rendered text with a synchronous tokenizer (prefix.ts tokenizeFormatted is the engine's twin). */
export function formatTokens(tokenize: Tokenize, text: string, o: TokenPlace): Int32Array {
  const t = tokenize(text, tokenizeOptions(o));
  if (!needsBos(t, o)) return t;
  const out = new Int32Array(t.length + 1);
  out[0] = o.bos.id;
  out.set(t, 1);
  return out;
}
