// Vocabulary-only GGUF files made from a Hugging Face tokenizer.json (byte-level BPE), written the way
// llama.cpp's convert_hf_to_gguf.py (_set_vocab_gpt2 + gguf-py's SpecialVocab) writes them:
//   tokenizer.ggml.model "gpt2", tokenizer.ggml.pre as given, tokens by id (the model's vocabulary and the
//   added tokens; ids nobody uses become "[PAD<id>]" of type UNUSED), token_type NORMAL for vocabulary tokens,
//   CONTROL for added tokens that are special or look special (<|...|>), USER_DEFINED for the other added
//   tokens; merges as "left right"; bos/eos/unk/pad ids and add_bos_token/add_eos_token from
//   tokenizer_config.json (or, failing that, the post-processor's template); the chat template.
// The converter also reads config.json (vocab_size, bos/eos ids) which the npm tokenizer packages do not ship:
// the options stand in for it.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { arr, u32, ValueType, writeGguf, type MetaValue } from './gguf-writer.ts';
import { repoRoot } from './shared.ts';

export interface VocabGgufOptions {
  /** tokenizer.ggml.pre, e.g. 'llama-bpe' or 'qwen2'. */
  pre: string;
  /** general.architecture (default 'llama'). */
  architecture?: string;
  name?: string;
  /** Token texts for ids that config.json would give (used when tokenizer_config.json names none). */
  bos?: string;
  eos?: string;
  /** Written as tokenizer.ggml.eot_token_id (llama.cpp otherwise guesses it from the token texts). */
  eot?: string;
}

interface AddedToken {
  id: number;
  content: string;
  special: boolean;
}

const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

// convert_hf_to_gguf.py's does_token_look_special.
function looksSpecial(t: string): boolean {
  return (
    ['<pad>', '<mask>', '<2mass>', '[@BOS@]'].includes(t) ||
    (t.startsWith('<|') && t.endsWith('|>')) ||
    (t.startsWith('<\uFF5C') && t.endsWith('\uFF5C>')) ||
    (t.startsWith('<unused') && t.endsWith('>'))
  );
}

function tokenName(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string')
    return (v as { content: string }).content;
  return undefined;
}

/** Builds the GGUF metadata for tokenizer.json (+ tokenizer_config.json beside it, if any). */
export function vocabMetadataFromTokenizerJson(
  tokenizerJsonPath: string,
  opts: VocabGgufOptions,
): [string, MetaValue][] {
  const tj = JSON.parse(readFileSync(tokenizerJsonPath, 'utf8'));
  const configPath = join(dirname(tokenizerJsonPath), 'tokenizer_config.json');
  const config = existsSync(configPath) ? JSON.parse(readFileSync(configPath, 'utf8')) : {};
  if (tj.model?.type !== 'BPE') throw new Error(`${tokenizerJsonPath}: not a BPE tokenizer (${tj.model?.type})`);

  const byId = new Map<number, { text: string; type: number }>();
  for (const [text, id] of Object.entries(tj.model.vocab as Record<string, number>))
    byId.set(id, { text, type: TOKEN_TYPE.NORMAL });
  for (const a of (tj.added_tokens ?? []) as AddedToken[]) {
    const control = a.special || looksSpecial(a.content);
    // User-defined tokens are matched as raw text, so the converter turns SentencePiece spaces back into spaces.
    const text = control ? a.content : a.content.replaceAll('\u2581', ' ');
    byId.set(a.id, { text, type: control ? TOKEN_TYPE.CONTROL : TOKEN_TYPE.USER_DEFINED });
  }
  let n = 0;
  for (const id of byId.keys()) n = Math.max(n, id + 1);
  const tokens: string[] = [];
  const types: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = byId.get(i);
    tokens.push(t ? t.text : `[PAD${i}]`);
    types.push(t ? t.type : TOKEN_TYPE.UNUSED);
  }
  const merges = (tj.model.merges as (string | [string, string])[]).map((m) => (Array.isArray(m) ? m.join(' ') : m));

  const idOf = new Map<string, number>();
  tokens.forEach((t, i) => idOf.set(t, i));
  const md: [string, MetaValue][] = [
    ['general.architecture', opts.architecture ?? 'llama'],
    ['general.name', opts.name ?? opts.pre],
    ['tokenizer.ggml.model', 'gpt2'],
    ['tokenizer.ggml.pre', opts.pre],
    ['tokenizer.ggml.tokens', tokens],
    ['tokenizer.ggml.token_type', arr(ValueType.INT32, types)],
    ['tokenizer.ggml.merges', merges],
  ];
  const special = (key: string, text: string | undefined) => {
    if (text === undefined) return;
    const id = idOf.get(text);
    if (id === undefined) throw new Error(`${tokenizerJsonPath}: ${key} '${text}' is not a token`);
    md.push([`tokenizer.ggml.${key}`, u32(id)]);
  };
  special('bos_token_id', tokenName(config.bos_token) ?? opts.bos);
  special('eos_token_id', tokenName(config.eos_token) ?? opts.eos);
  special('unknown_token_id', tokenName(config.unk_token));
  special('padding_token_id', tokenName(config.pad_token));
  special('eot_token_id', opts.eot);

  // add_bos/add_eos: tokenizer_config.json's flags, else what the post-processor's template adds.
  let addBos: boolean | undefined = typeof config.add_bos_token === 'boolean' ? config.add_bos_token : undefined;
  let addEos: boolean | undefined = typeof config.add_eos_token === 'boolean' ? config.add_eos_token : undefined;
  const pp = tj.post_processor;
  const templates = pp?.type === 'Sequence' ? pp.processors : [pp];
  const tp = templates?.find((p: { type?: string } | null) => p?.type === 'TemplateProcessing');
  if (tp && Array.isArray(tp.single)) {
    const first = tp.single[0]?.SpecialToken?.id;
    const last = tp.single[tp.single.length - 1]?.SpecialToken?.id;
    addBos ??= first !== undefined && first === tokenName(config.bos_token);
    addEos ??= last !== undefined && last === tokenName(config.eos_token);
  }
  if (addBos !== undefined) md.push(['tokenizer.ggml.add_bos_token', addBos]);
  if (addEos !== undefined) md.push(['tokenizer.ggml.add_eos_token', addEos]);
  if (typeof config.chat_template === 'string') md.push(['tokenizer.chat_template', config.chat_template]);
  return md;
}

/** Writes the vocabulary-only GGUF of tokenizer.json to outPath. */
export function writeVocabGguf(tokenizerJsonPath: string, outPath: string, opts: VocabGgufOptions): void {
  writeGguf(outPath, { metadata: vocabMetadataFromTokenizerJson(tokenizerJsonPath, opts) });
}

const HELPER_VERSION = 1; // bump when the output changes

/**
 * The vocabulary-only GGUF of tokenizer.json, cached under test/.fixtures/ and rebuilt when the source file,
 * the options or this helper change. Returns its path.
 */
export function cachedVocabGguf(name: string, tokenizerJsonPath: string, opts: VocabGgufOptions): string {
  const st = statSync(tokenizerJsonPath);
  const key = createHash('sha256')
    .update(JSON.stringify([HELPER_VERSION, tokenizerJsonPath, st.size, st.mtimeMs, opts]))
    .digest('hex')
    .slice(0, 12);
  const dir = join(repoRoot, 'test', '.fixtures');
  const out = join(dir, `${name}-${key}.gguf`);
  if (existsSync(out)) return out;
  mkdirSync(dir, { recursive: true });
  // Written under a temporary name and renamed, so that concurrent test runs never see half a file.
  const tmp = `${out}.${process.pid}.tmp`;
  writeVocabGguf(tokenizerJsonPath, tmp, opts);
  renameSync(tmp, out);
  // Older versions of the same fixture are stale now.
  for (const f of readdirSync(dir))
    if (f.startsWith(`${name}-`) && f.endsWith('.gguf') && join(dir, f) !== out) rmSync(join(dir, f), { force: true });
  return out;
}

/** The tokenizer.ggml.* metadata of a GGUF file, read in plain TypeScript (for reference implementations). */
export interface GgufVocab {
  metadata: Map<string, unknown>;
  tokens: string[];
  types: number[];
  scores: number[];
  merges: string[];
}

export function readVocabGguf(path: string): GgufVocab {
  const b = readFileSync(path);
  let o = 0;
  const u32 = () => ((o += 4), b.readUInt32LE(o - 4));
  const u64 = () => ((o += 8), Number(b.readBigUInt64LE(o - 8)));
  const str = () => {
    const n = u64();
    o += n;
    return b.toString('utf8', o - n, o);
  };
  const value = (t: number): unknown => {
    switch (t) {
      case ValueType.UINT8:
        return b[o++];
      case ValueType.INT8:
        return ((o += 1), b.readInt8(o - 1));
      case ValueType.UINT16:
        return ((o += 2), b.readUInt16LE(o - 2));
      case ValueType.INT16:
        return ((o += 2), b.readInt16LE(o - 2));
      case ValueType.UINT32:
        return u32();
      case ValueType.INT32:
        return ((o += 4), b.readInt32LE(o - 4));
      case ValueType.FLOAT32:
        return ((o += 4), b.readFloatLE(o - 4));
      case ValueType.BOOL:
        return b[o++] !== 0;
      case ValueType.STRING:
        return str();
      case ValueType.UINT64:
        return u64();
      case ValueType.INT64:
        return ((o += 8), Number(b.readBigInt64LE(o - 8)));
      case ValueType.FLOAT64:
        return ((o += 8), b.readDoubleLE(o - 8));
      case ValueType.ARRAY: {
        const et = u32();
        const n = u64();
        const a: unknown[] = new Array(n);
        for (let i = 0; i < n; i++) a[i] = value(et);
        return a;
      }
      default:
        throw new Error(`${path}: unknown GGUF value type ${t}`);
    }
  };
  if (b.toString('latin1', 0, 4) !== 'GGUF') throw new Error(`${path} is not a GGUF file`);
  o = 8;
  u64(); // tensors
  const nkv = u64();
  const metadata = new Map<string, unknown>();
  for (let i = 0; i < nkv; i++) {
    const k = str();
    metadata.set(k, value(u32()));
  }
  const tokens = (metadata.get('tokenizer.ggml.tokens') as string[]) ?? [];
  return {
    metadata,
    tokens,
    types: (metadata.get('tokenizer.ggml.token_type') as number[]) ?? tokens.map(() => 1),
    scores: (metadata.get('tokenizer.ggml.scores') as number[]) ?? tokens.map(() => 0),
    merges: (metadata.get('tokenizer.ggml.merges') as string[]) ?? [],
  };
}
