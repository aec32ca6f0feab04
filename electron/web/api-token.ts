// The bearer token programs present to the web host (`Authorization: Bearer <token>`, an OpenAI client's
// api_key). Made at first start (32 random bytes, base64url) and kept in the library folder, readable by
// the user only; `folio serve --token T` or FOLIO_API_TOKEN use another one instead, without storing it.
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { privateDir } from '../storage/private-files.ts';

export const API_TOKEN_FILE = 'api-token';
export const API_TOKEN_ENV = 'FOLIO_API_TOKEN';

/** A token travels in a header: visible ASCII, no spaces, and long enough not to be guessed. */
export function checkToken(token: string, where: string): string {
  if (!/^[\x21-\x7e]{16,512}$/.test(token))
    throw new Error(`${where}: an API token is 16 to 512 visible ASCII characters without spaces`);
  return token;
}

export interface ApiToken {
  token: string;
  /** Where it came from: the file it is stored in, or the flag / variable that set it. */
  source: string;
}

/** The token to use: --token, then FOLIO_API_TOKEN, then the stored one (made on first use). */
export function resolveApiToken(o: { dataDir: string; flag?: string; env?: NodeJS.ProcessEnv }): ApiToken {
  if (o.flag !== undefined) return { token: checkToken(o.flag, '--token'), source: '--token' };
  const fromEnv = (o.env ?? process.env)[API_TOKEN_ENV];
  if (fromEnv) return { token: checkToken(fromEnv, API_TOKEN_ENV), source: API_TOKEN_ENV };
  const file = join(o.dataDir, API_TOKEN_FILE);
  let stored: string | null = null;
  try {
    stored = readFileSync(file, 'utf8').trim();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new Error(`cannot read the API token in ${file}: ${(e as Error).message}`);
  }
  if (stored) {
    chmodSync(file, 0o600); // tighten a file copied or created with looser rights
    return { token: checkToken(stored, file), source: file };
  }
  privateDir(o.dataDir);
  const token = randomBytes(32).toString('base64url');
  // 'wx': two servers starting at once must not overwrite each other's token; the loser reads the winner's.
  try {
    writeFileSync(file, token + '\n', { mode: 0o600, flag: 'wx' });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST')
      return { token: checkToken(readFileSync(file, 'utf8').trim(), file), source: file };
    throw new Error(`cannot store the API token in ${file}: ${(e as Error).message}`);
  }
  return { token, source: file };
}
