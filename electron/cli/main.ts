// `folio`: everything the engine does, scriptable. Each command prints text for people or, with --json,
// one JSON object for programs (tests and benchmarks use it).
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { readFileSync } from 'node:fs';

import { loadAddon, type EngineError, type Model } from '../engine/binding.ts';

type Values = Record<string, string | boolean | undefined>;
interface Command {
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  run(v: Values): Promise<void>;
}

class UsageError extends Error {}

const common = {
  model: { type: 'string' },
  json: { type: 'boolean' },
  threads: { type: 'string' },
  ctx: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function int(v: Values, name: string, def: number, min = 0): number {
  const s = v[name];
  if (s === undefined) return def;
  const n = Number(s);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`--${name} must be an integer >= ${min}, not '${s}'`);
  return n;
}

function float(v: Values, name: string, def: number): number {
  const s = v[name];
  if (s === undefined) return def;
  const n = Number(s);
  if (!Number.isFinite(n)) throw new UsageError(`--${name} must be a number, not '${s}'`);
  return n;
}

function str(v: Values, name: string): string | undefined {
  const s = v[name];
  return typeof s === 'string' ? s : undefined;
}

function need(v: Values, name: string): string {
  const s = str(v, name);
  if (s === undefined) throw new UsageError(`--${name} is required`);
  return s;
}

/** The prompt text from --prompt or --prompt-file (exact bytes, no trailing newline added or removed). */
function promptText(v: Values): string {
  const file = str(v, 'prompt-file');
  if (file !== undefined) return readFileSync(file, 'utf8');
  return str(v, 'prompt') ?? '';
}

async function openModel(v: Values): Promise<Model> {
  return loadAddon().loadModel(need(v, 'model'));
}

function sessionOptions(v: Values) {
  return { nThreads: int(v, 'threads', 0), nCtx: int(v, 'ctx', 0) };
}

function print(v: Values, json: unknown, text: string) {
  process.stdout.write(v.json ? JSON.stringify(json) + '\n' : text);
}

function promptTokens(model: Model, text: string): Int32Array {
  // BOS as the model's metadata says; special-token text in the prompt stays plain text.
  const tokens = model.tokenize(text, { addSpecial: true, parseSpecial: false });
  if (tokens.length === 0) throw new UsageError('the prompt is empty and the model adds no BOS token: give a --prompt');
  return tokens;
}

const commands: Record<string, Command> = {
  info: {
    summary: 'architecture, sizes, tensor types, tokenizer and memory of a model',
    usage: 'folio info --model M.gguf [--ctx N] [--json]',
    options: { ...common },
    async run(v) {
      const model = await openModel(v);
      const info = model.info();
      const nCtx = int(v, 'ctx', Math.min(info.contextLength, 4096), 1);
      const kvBytes = info.nLayer * nCtx * info.nHeadKv * (info.headDim + info.headDimV) * 4; // F32 K and V
      const memory = { weightBytes: info.weightBytes, kvBytes, nCtx, totalBytes: info.weightBytes + kvBytes };
      const gib = (b: number) => (b / 2 ** 30).toFixed(2) + ' GiB';
      const types = Object.entries(info.tensorTypes).map(([t, n]) => `${t}×${n}`).join(' ');
      print(
        v,
        { ...info, chatTemplate: info.chatTemplate || null, memory },
        [
          `${info.name || info.path}`,
          `  architecture  ${info.architecture}, ${(info.nParams / 1e6).toFixed(2)}M parameters, ${types}`,
          `  shape         ${info.nLayer} layers, embedding ${info.nEmbd}, ${info.nHead} query heads, ${info.nHeadKv} KV heads, head ${info.headDim}, FFN ${info.nFf}`,
          `  context       ${info.contextLength} tokens, rope base ${info.ropeBase}, scaling ${info.ropeScaling}`,
          `  tokenizer     ${info.tokenizer.model}/${info.tokenizer.pre}, ${info.tokenizer.nTokens} tokens, BOS ${info.tokenizer.bos}${info.tokenizer.addBos ? ' (added)' : ''}, EOS ${info.tokenizer.eos}`,
          `  memory        weights ${gib(info.weightBytes)} (mapped) + KV cache ${gib(kvBytes)} at ${nCtx} tokens (F32)`,
          `  kernels       ${info.isa}`,
          '',
        ].join('\n'),
      );
    },
  },

  tokenize: {
    summary: 'token ids of a text',
    usage: 'folio tokenize --model M --text "..." [--no-bos] [--parse-special] [--json]',
    options: { ...common, text: { type: 'string' }, file: { type: 'string' }, 'no-bos': { type: 'boolean' }, 'parse-special': { type: 'boolean' } },
    async run(v) {
      const model = await openModel(v);
      const text = str(v, 'file') !== undefined ? readFileSync(str(v, 'file')!, 'utf8') : need(v, 'text');
      const ids = Array.from(model.tokenize(text, { addSpecial: !v['no-bos'], parseSpecial: !!v['parse-special'] }));
      const pieces = ids.map((id) => Buffer.from(model.tokenToPiece(id, true)).toString('utf8'));
      print(v, { tokens: ids, pieces, count: ids.length }, ids.map((id, i) => `${id}\t${JSON.stringify(pieces[i])}`).join('\n') + '\n');
    },
  },

  generate: {
    summary: 'continue a prompt',
    usage:
      'folio generate --model M --prompt "..." [--n 64] [--temp 0.8] [--top-k 40] [--top-p 0.95] [--min-p 0.05]\n' +
      '               [--repeat-penalty 1] [--repeat-last-n 64] [--seed S] [--stop-eos] [--threads N] [--ctx N] [--json]',
    options: {
      ...common,
      prompt: { type: 'string' }, 'prompt-file': { type: 'string' }, n: { type: 'string' }, temp: { type: 'string' },
      'top-k': { type: 'string' }, 'top-p': { type: 'string' }, 'min-p': { type: 'string' },
      'repeat-penalty': { type: 'string' }, 'repeat-last-n': { type: 'string' }, seed: { type: 'string' },
      'stop-eos': { type: 'boolean' },
    },
    async run(v) {
      // Every flag is checked before the model is loaded.
      const seed = v.seed !== undefined ? int(v, 'seed', 0) : Math.floor(Math.random() * 2 ** 32);
      const sampling = {
        n: int(v, 'n', 64),
        temperature: float(v, 'temp', 0.8),
        topK: int(v, 'top-k', 40),
        topP: float(v, 'top-p', 0.95),
        minP: float(v, 'min-p', 0.05),
        repeatPenalty: float(v, 'repeat-penalty', 1),
        repeatLastN: int(v, 'repeat-last-n', 64, -1),
        seed,
        stopAtEog: !!v['stop-eos'],
      };
      const sessionOpts = sessionOptions(v);
      const model = await openModel(v);
      const tokens = promptTokens(model, promptText(v));
      const session = model.createSession(sessionOpts);
      const pre = await session.prefill(tokens);
      const gen = await session.generate({
        ...sampling,
        onToken: v.json ? undefined : (t) => void process.stdout.write(t.text),
      });
      const threads = session.nThreads;
      session.dispose();
      if (v.json) {
        print(v, {
          tokens: gen.tokens,
          text: gen.text,
          prompt_tokens: tokens.length,
          prompt_token_ids: Array.from(tokens),
          prefill_tokens_per_s: pre.tokensPerSecond,
          decode_tokens_per_s: gen.tokensPerSecond,
          stop_reason: gen.stopReason,
          seed,
          threads,
        }, '');
      } else {
        process.stdout.write('\n');
        process.stderr.write(
          `\n[${tokens.length} prompt tokens at ${pre.tokensPerSecond.toFixed(1)} tokens/s; ` +
            `${gen.tokens.length} generated at ${gen.tokensPerSecond.toFixed(1)} tokens/s; stop: ${gen.stopReason}]\n`,
        );
      }
    },
  },

  logits: {
    summary: 'logits after a prompt (the last position, or every position with --all)',
    usage: 'folio logits --model M --prompt "..." [--all] [--top 10] [--json]',
    options: { ...common, prompt: { type: 'string' }, 'prompt-file': { type: 'string' }, all: { type: 'boolean' }, top: { type: 'string' } },
    async run(v) {
      const model = await openModel(v);
      const tokens = promptTokens(model, promptText(v));
      const session = model.createSession(sessionOptions(v));
      const all = !!v.all;
      const { logits } = await session.prefill(tokens, { allLogits: all });
      session.dispose();
      const nVocab = model.info().nVocab;
      const rows: number[][] = [];
      for (let r = 0; r < logits.length / nVocab; r++) rows.push(Array.from(logits.subarray(r * nVocab, (r + 1) * nVocab)));
      const last = rows[rows.length - 1];
      const k = int(v, 'top', 10, 1);
      const top = last.map((x, id) => [id, x] as [number, number]).sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, k);
      print(
        v,
        { tokens: Array.from(tokens), n_vocab: nVocab, ...(all ? { logits: rows } : { logits: last }), top },
        top.map(([id, x]) => `${id}\t${x.toFixed(6)}\t${JSON.stringify(Buffer.from(model.tokenToPiece(id, true)).toString('utf8'))}`).join('\n') + '\n',
      );
    },
  },
};

function help(): string {
  return (
    'folio: chat with long documents on your own machine\n\nCommands:\n' +
    Object.entries(commands).map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}\n      ${c.usage}`).join('\n') +
    '\n'
  );
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(help());
    return name ? 0 : 2;
  }
  const cmd = commands[name];
  if (!cmd) {
    process.stderr.write(`folio: unknown command '${name}'\n\n${help()}`);
    return 2;
  }
  let values: Values = {};
  try {
    values = parseArgs({ args: rest, options: cmd.options, strict: true, allowPositionals: false }).values as Values;
    if (values.help) {
      process.stdout.write(`${cmd.usage}\n`);
      return 0;
    }
    await cmd.run(values);
    return 0;
  } catch (e) {
    const err = e as EngineError;
    const usage = e instanceof UsageError || (err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS');
    const code = usage ? 'USAGE' : err.code ?? 'INTERNAL';
    if (values.json) process.stdout.write(JSON.stringify({ error: { code, message: err.message } }) + '\n');
    else process.stderr.write(`folio ${name}: ${err.message}${usage ? `\nusage: ${cmd.usage}` : ` (${code})`}\n`);
    return usage ? 2 : 1;
  }
}
