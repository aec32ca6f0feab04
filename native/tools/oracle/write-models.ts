// Writes the random-weight model of every oracle case (test/helpers/oracle-cases.ts) into a folder and
// prints one line per case: name, path, n_ctx, greedy steps, positions and prompt, for make-dumps.sh.
import { join } from 'node:path';

import { ORACLE_CASES, promptOf } from '../../../test/helpers/oracle-cases.ts';
import { writeRandomModel } from '../../../test/helpers/random-model.ts';

const dir = process.argv[2];
if (!dir) throw new Error('usage: write-models.ts DIR');
for (const c of ORACLE_CASES) {
  const path = join(dir, `${c.name}.gguf`);
  writeRandomModel(path, c.model);
  console.log([c.name, path, c.nCtx, c.nGreedy, c.positions.join(','), promptOf(c).join(',')].join(' '));
}
