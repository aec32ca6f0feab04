// `folio`: everything the engine does, scriptable. Each command prints text for people or, with --json,
// one JSON object for programs (tests and benchmarks use it). Commands live in commands/, one per file.
import { parseArgs } from 'node:util';

import type { EngineError } from '../engine/binding.ts';
import { UsageError, type Command, type Values } from './args.ts';
import { info } from './commands/info.ts';
import { tokenize } from './commands/tokenize.ts';
import { generate } from './commands/generate.ts';
import { logits } from './commands/logits.ts';
import { compress } from './commands/compress.ts';
import { bench } from './commands/bench.ts';
import { benchKv } from './commands/bench-kv.ts';
import { benchSet } from './commands/bench-set.ts';
import { benchOcr } from './commands/bench-ocr.ts';
import { benchCompare } from './commands/bench-compare.ts';
import { evalCommand } from './commands/eval.ts';
import { chat } from './commands/chat.ts';
import { serve } from './commands/serve.ts';

const commands: Record<string, Command> = {
  info,
  tokenize,
  generate,
  logits,
  compress,
  bench,
  'bench-kv': benchKv,
  'bench-set': benchSet,
  'bench-ocr': benchOcr,
  'bench-compare': benchCompare,
  eval: evalCommand,
  chat,
  serve,
};

function help(): string {
  return (
    'folio: chat with long documents on your own machine\n\nCommands:\n' +
    Object.entries(commands)
      .map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}\n      ${c.usage}`)
      .join('\n') +
    '\n\ngenerate, logits, compress, chat, eval and bench take --backend auto|cpu|cuda|vulkan: auto (the default) runs on\n' +
    'CUDA, else on a discrete Vulkan GPU (any GPU on macOS), else on the CPU; `folio info` says which and why.\n'
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
    const code = usage ? 'USAGE' : (err.code ?? 'INTERNAL');
    if (values.json) process.stdout.write(JSON.stringify({ error: { code, message: err.message } }) + '\n');
    else process.stderr.write(`folio ${name}: ${err.message}${usage ? `\nusage: ${cmd.usage}` : ` (${code})`}\n`);
    return usage ? 2 : 1;
  }
}
