// folio generate
import {
  type Command,
  common,
  int,
  promptText,
  openModel,
  sessionOptions,
  print,
  promptTokens,
  samplingFlags,
  samplingOptions,
} from '../args.ts';

export const generate: Command = {
  summary: 'continue a prompt',
  usage:
    'folio generate --model M --prompt "..." [--n 64] [--temp 0.8] [--top-k 40] [--top-p 0.95] [--min-p 0.05]\n' +
    '               [--repeat-penalty 1] [--repeat-last-n 64] [--seed S] [--stop-eos] [--threads N] [--ctx N] [--json]',
  options: {
    ...common,
    prompt: { type: 'string' },
    'prompt-file': { type: 'string' },
    n: { type: 'string' },
    ...samplingFlags,
    'stop-eos': { type: 'boolean' },
  },
  async run(v) {
    // Every flag is checked before the model is loaded.
    const sampling = {
      n: int(v, 'n', 64),
      ...samplingOptions(v),
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
      print(
        v,
        {
          tokens: gen.tokens,
          text: gen.text,
          prompt_tokens: tokens.length,
          prompt_token_ids: Array.from(tokens),
          prefill_tokens_per_s: pre.tokensPerSecond,
          decode_tokens_per_s: gen.tokensPerSecond,
          stop_reason: gen.stopReason,
          seed: sampling.seed,
          threads,
        },
        '',
      );
    } else {
      process.stdout.write('\n');
      process.stderr.write(
        `\n[${tokens.length} prompt tokens at ${pre.tokensPerSecond.toFixed(1)} tokens/s; ` +
          `${gen.tokens.length} generated at ${gen.tokensPerSecond.toFixed(1)} tokens/s; stop: ${gen.stopReason}]\n`,
      );
    }
  },
};
