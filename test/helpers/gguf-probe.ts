// Puts one GGUF file through every reader the app uses, the way the app uses them: the addon's readGguf,
// loadModel + info() + tokenize (what the engine host does with a model), openVocab, and the TypeScript
// header reader + summary (what the models page shows). It sorts each outcome into a class (ok, or the error
// code) and lists what is a failure: an error without a code, INTERNAL or OUT_OF_MEMORY, a non-ApiError from
// the TS reader, and any disagreement between the engine and the TS check on a wrong-typed key.
// A crash or a hang shows as the process dying or stalling: run this in a child process (gguf-fuzz-run.ts).
//
//   node --import tsx test/helpers/gguf-probe.ts FILE...   prints one JSON line per file
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { ApiError } from '../../electron/api/contract.ts';
import { loadAddon, type FolioAddon } from '../../electron/engine/binding.ts';
import { parseGgufHeader, summarizeGguf } from '../../electron/models/gguf-header.ts';
import { checkMetadata } from '../../electron/models/gguf-metadata-rules.ts';

export interface ProbeResult {
  /** Outcome per reader: 'ok' or the error's code. */
  read: string;
  load: string;
  info: string;
  vocab: string;
  header: string;
  /** The engine's message when the load failed; the TS check's code and message when it found a wrong-typed
   * key or a value out of range. */
  loadMessage: string | null;
  metadataCode: string | null;
  typeError: string | null;
  failures: string[];
}

const CODE = /^[A-Z][A-Z0-9_]*$/;
// Codes that mean the engine did not foresee the input (or allocated beyond what a file can justify).
const UNFORESEEN = new Set(['INTERNAL', 'OUT_OF_MEMORY']);

function outcome(e: unknown, where: string, failures: string[]): string {
  const code = (e as { code?: unknown })?.code;
  const message = (e as Error)?.message ?? String(e);
  if (typeof code !== 'string' || !CODE.test(code)) {
    failures.push(`${where}: an error without a code: ${message}`);
    return 'UNCODED';
  }
  if (UNFORESEEN.has(code)) failures.push(`${where}: ${code}: ${message}`);
  return code;
}

export async function probeGguf(
  addon: FolioAddon,
  path: string,
  bytes: Uint8Array = readFileSync(path),
): Promise<ProbeResult> {
  const failures: string[] = [];
  const r: ProbeResult = {
    read: 'ok',
    load: 'ok',
    info: '-',
    vocab: 'ok',
    header: 'ok',
    loadMessage: null,
    metadataCode: null,
    typeError: null,
    failures,
  };

  try {
    addon.readGguf(path);
  } catch (e) {
    r.read = outcome(e, 'readGguf', failures);
  }
  try {
    const model = await addon.loadModel(path);
    try {
      model.info();
      r.info = 'ok';
      model.tokenize('Once upon a time, a \u{1F600} <s> story', { addSpecial: true, parseSpecial: true });
    } catch (e) {
      // a model that loaded has passed every check: nothing about it may fail later
      r.info = outcome(e, 'info/tokenize', failures);
      failures.push(`info/tokenize failed on a model that loaded: ${(e as Error).message}`);
    } finally {
      model.dispose();
    }
  } catch (e) {
    r.load = outcome(e, 'loadModel', failures);
    r.loadMessage = (e as Error).message ?? null;
  }
  try {
    addon.openVocab(path);
  } catch (e) {
    r.vocab = outcome(e, 'openVocab', failures);
  }
  try {
    const h = await parseGgufHeader(bytes, path);
    summarizeGguf(h);
    const bad = checkMetadata(h);
    r.metadataCode = bad?.code ?? null;
    r.typeError = bad?.message ?? null;
  } catch (e) {
    if (e instanceof ApiError) r.header = e.code;
    else {
      r.header = 'THROWN';
      failures.push(`TS header reader threw a ${(e as Error)?.name}: ${(e as Error)?.message}`);
    }
  }

  // One rule in both languages: where both readers took the header, the engine refuses a wrong-typed key or
  // a value out of range (GGUF_TYPE, GGUF_VALUE, before anything else) exactly when the TS check finds one,
  // with the same code and message.
  if (r.read === 'ok' && r.header === 'ok') {
    const engineRefused = r.load === 'GGUF_TYPE' || r.load === 'GGUF_VALUE' ? r.loadMessage : null;
    const agree =
      engineRefused === null
        ? r.typeError === null
        : r.typeError !== null && r.metadataCode === r.load && engineRefused.endsWith(`: ${r.typeError}`);
    if (!agree)
      failures.push(
        `the engine and the TS check disagree: engine ${r.load} ${r.loadMessage ?? ''} / TS ${r.typeError ?? 'no type error'}`,
      );
  }
  return r;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const addon = loadAddon();
  for (const path of process.argv.slice(2))
    process.stdout.write(JSON.stringify({ path, ...(await probeGguf(addon, path)) }) + '\n');
}
