// Cases of the RULER tasks, built with the model's own tokenizer and chat format: each haystack is sized
// to its length bucket in the model's tokens (the rendered document, one question and the answer's tokens
// fit in it), and kept only when its questions are answerable from it (tasks.ts). Deterministic: a case
// depends only on the seed, its task, its length and its number, never on which other cases are made.
import type { Model } from '../../engine/binding.ts';
import { Conversation, formatTokens, systemContent } from '../../services/chat-format.ts';
import { chatFormat, type ChatFormat } from '../../services/prefix.ts';
import { UsageError } from '../args.ts';
import type { Corpus } from './haystack.ts';
import { Rng } from './random.ts';
import { TASKS, type Draft, type Filled, type Question, type RulerTask } from './tasks.ts';

/** A question as the model sees it. */
export interface CaseQuestion extends Question {
  /** The text appended after the document: the rendered user turn, the assistant header and the answer prefix. */
  prompt: string;
  tokens: Int32Array;
  /** Tokens generated for the answer: the expected answer's and a few more. */
  maxTokens: number;
}

export interface RulerCase {
  id: string;
  task: RulerTask;
  length: number;
  instruction: string;
  haystack: string;
  /** The rendered system message (instruction and haystack) as tokens: what is compressed. */
  prefixTokens: Int32Array;
  questions: CaseQuestion[];
}

/** What the generator needs of a model: its tokenizer and chat format. */
export interface Tokenizer {
  tokenize: Model['tokenize'];
  format: ChatFormat;
}

export function modelTokenizer(model: Model): Tokenizer {
  const info = model.info();
  const special = (id: number) => (id < 0 ? '' : model.detokenize([id], { special: true }));
  return {
    tokenize: (t, o) => model.tokenize(t, o),
    format: chatFormat(info, special(info.tokenizer.bos), special(info.tokenizer.eos)),
  };
}

/** The answer prefix as appended after the turn: a plain-format prompt ends "Answer: ... is " as the
 * needle-eval prompts do (an SPM model then writes digits right away); a template's ends at the prefix. */
export function answerText(format: ChatFormat, answerPrefix: string): string {
  return format.template ? answerPrefix : ` ${answerPrefix} `;
}

/** The tokens of a haystack and its questions in the model's chat format. */
export function render(
  tok: Tokenizer,
  instruction: string,
  f: Filled,
): { prefix: Int32Array; questions: CaseQuestion[] } {
  const place = (first: boolean) => ({ template: tok.format.template, first, bos: tok.format.bos });
  const conversation = new Conversation(tok.format.renderer, systemContent(f.haystack, instruction));
  const prefix = formatTokens(tok.tokenize, conversation.prefixText, place(true));
  const questions = f.questions.map((q) => {
    const prompt = conversation.plan(q.text).text + answerText(tok.format, q.answerPrefix);
    const answer = tok.tokenize(` ${q.answers.join(', ')}`, { addSpecial: false, parseSpecial: false });
    return { ...q, prompt, tokens: formatTokens(tok.tokenize, prompt, place(false)), maxTokens: answer.length + 4 };
  });
  return { prefix, questions };
}

/** Tokens a case takes: the document, and its longest question with its answer. */
const footprint = (r: ReturnType<typeof render>) =>
  r.prefix.length + Math.max(...r.questions.map((q) => q.tokens.length + q.maxTokens));

/** FNV-1a of a string: the seed of one case, from the run's seed and the case's name. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** The most filler units whose case fits in `length` tokens. */
function largestFill(draft: Draft, size: (k: number) => number, length: number, task: string): number {
  const lo0 = draft.minFill;
  const least = size(lo0);
  if (least > length)
    throw new UsageError(`--lengths: ${length} tokens is too short for ${task}: its smallest case takes ${least}`);
  // Double until too long (or at the task's limit), then halve the gap.
  let lo = lo0,
    hi = Math.max(lo0 + 1, 2 * lo0);
  while (hi <= draft.maxFill && size(hi) <= length) {
    lo = hi;
    hi *= 2;
  }
  hi = Math.min(hi, draft.maxFill + 1);
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (size(mid) <= length) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** A smaller haystack may settle what the largest could not (a tie among frequent words); this many are tried. */
const SHRINK_TRIES = 16;
/** Fresh draws of a case before giving up. */
const DRAWS = 8;

/** One case: drawn, sized to its length, checked for answerability. */
export function generateCase(
  tok: Tokenizer,
  corpus: Corpus,
  task: RulerTask,
  length: number,
  index: number,
  seed: number,
): RulerCase {
  const id = `${task}-${length}-${index}`;
  const rng = new Rng(hash(`${seed}/${id}`));
  let problems: string[] = [];
  for (let draw = 0; draw < DRAWS; draw++) {
    const draft = TASKS[task](rng, corpus, length);
    const size = (k: number) => footprint(render(tok, draft.instruction, draft.at(k)));
    const best = largestFill(draft, size, length, task);
    for (let k = best; k >= Math.max(draft.minFill, best - SHRINK_TRIES); k--) {
      const filled = draft.at(k);
      problems = draft.problems(filled);
      const rendered = render(tok, draft.instruction, filled);
      // A smaller haystack can have other answers, longer in tokens: the case is measured again.
      if (problems.length > 0 || footprint(rendered) > length) continue;
      const { prefix, questions } = rendered;
      return {
        id,
        task,
        length,
        instruction: draft.instruction,
        haystack: filled.haystack,
        prefixTokens: prefix,
        questions,
      };
    }
  }
  throw Object.assign(
    new Error(
      `${id}: no answerable case in ${DRAWS} draws (${problems.join('; ')}): give --docs a folder with more text`,
    ),
    { code: 'RULER_UNANSWERABLE' },
  );
}

export interface GenerateOptions {
  tasks: readonly RulerTask[];
  lengths: readonly number[];
  /** Haystacks per task and length. */
  samples: number;
  seed: number;
}

/** Every case of a run: by task, then length, then number. */
export function generateCases(tok: Tokenizer, corpus: Corpus, o: GenerateOptions): RulerCase[] {
  return o.tasks.flatMap((task) =>
    o.lengths.flatMap((length) =>
      Array.from({ length: o.samples }, (_, i) => generateCase(tok, corpus, task, length, i, o.seed)),
    ),
  );
}
