// folio tokenize
import { readFileSync } from 'node:fs';

import { type Command, common, str, need, openModel, print } from '../args.ts';

export const tokenize: Command = {
  summary: 'token ids of a text',
  usage: 'folio tokenize --model M --text "..." [--no-bos] [--parse-special] [--json]',
  options: {
    ...common,
    text: { type: 'string' },
    file: { type: 'string' },
    'no-bos': { type: 'boolean' },
    'parse-special': { type: 'boolean' },
  },
  async run(v) {
    const model = await openModel(v);
    const text = str(v, 'file') !== undefined ? readFileSync(str(v, 'file')!, 'utf8') : need(v, 'text');
    const ids = Array.from(model.tokenize(text, { addSpecial: !v['no-bos'], parseSpecial: !!v['parse-special'] }));
    const pieces = ids.map((id) => Buffer.from(model.tokenToPiece(id, true)).toString('utf8'));
    print(
      v,
      { tokens: ids, pieces, count: ids.length },
      ids.map((id, i) => `${id}\t${JSON.stringify(pieces[i])}`).join('\n') + '\n',
    );
  },
};
