// folio logits
import {
  type Command,
  common,
  int,
  PRECISION_USAGE,
  promptText,
  openModel,
  sessionOptions,
  print,
  promptTokens,
} from '../args.ts';

export const logits: Command = {
  summary: 'logits after a prompt (the last position, or every position with --all)',
  usage: `folio logits --model M --prompt "..." [--all] [--top 10] ${PRECISION_USAGE} [--json]`,
  options: {
    ...common,
    prompt: { type: 'string' },
    'prompt-file': { type: 'string' },
    all: { type: 'boolean' },
    top: { type: 'string' },
  },
  async run(v) {
    const model = await openModel(v);
    const tokens = promptTokens(model, promptText(v));
    const session = model.createSession(sessionOptions(v));
    const all = !!v.all;
    const { logits } = await session.prefill(tokens, { allLogits: all });
    session.dispose();
    const nVocab = model.info().nVocab;
    const rows: number[][] = [];
    for (let r = 0; r < logits.length / nVocab; r++)
      rows.push(Array.from(logits.subarray(r * nVocab, (r + 1) * nVocab)));
    const last = rows[rows.length - 1];
    const k = int(v, 'top', 10, 1);
    const top = last
      .map((x, id) => [id, x] as [number, number])
      .sort((a, b) => b[1] - a[1] || a[0] - b[0])
      .slice(0, k);
    print(
      v,
      { tokens: Array.from(tokens), n_vocab: nVocab, ...(all ? { logits: rows } : { logits: last }), top },
      top
        .map(
          ([id, x]) =>
            `${id}\t${x.toFixed(6)}\t${JSON.stringify(Buffer.from(model.tokenToPiece(id, true)).toString('utf8'))}`,
        )
        .join('\n') + '\n',
    );
  },
};
