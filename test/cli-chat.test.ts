// `folio chat` on stories260K, questions piped to stdin as a user would type them: one compression, streamed
// answers, a multi-turn cache, /reset back to the compressed document, /stats, context limits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { RECOMMENDED_METHOD } from '../electron/shared/kv/methods.ts';
import { readGguf } from './helpers/gguf-reader.ts';
import { ValueType, arr, writeGguf, type MetaValue } from './helpers/gguf-writer.ts';
import { missing, repoRoot, sharedModel } from './helpers/shared.ts';

const stories = sharedModel('stories260K.gguf');
const skip = missing(stories);
const lily = join(repoRoot, 'test/docs/lily-and-the-red-kite.txt'); // 375 tokens with BOS
const folioJs = join(repoRoot, 'electron/cli/folio.mjs');
// The conversation's mechanics on pinned terms: no system prompt, 64 positions of room, the document's own
// positions, question and answer turns (the app's defaults are tested apart, below).
const pinned = ['--system', '', '--room', '64', '--positions', 'own', '--style', 'chat'];
const base = [
  'chat',
  '--model',
  stories,
  '--doc',
  lily,
  '--method',
  'ada-snapkv',
  '--budget',
  '0.2',
  '--temp',
  '0',
  ...pinned,
];

function chat(input: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [folioJs, ...base, ...args], { encoding: 'utf8', input });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

interface Turn {
  turn: number;
  prompt: number;
  answer: number;
  stop: string;
  position: number;
  text: string;
}

/** The turns of a chat transcript: the answer text before each status line, and the status line's numbers. */
function turns(out: string): Turn[] {
  const re =
    /([^\]]*?)\n\[turn (\d+): (\d+) prompt tokens, (\d+) answer tokens \(stop: (\w+)\); position (\d+) of 512(?:;[^\]]*)?\]\n/g;
  return [...out.matchAll(re)].map((m) => ({
    text: m[1].slice(m[1].lastIndexOf(']\n') + 1).replace(/^\n/, ''),
    turn: +m[2],
    prompt: +m[3],
    answer: +m[4],
    stop: m[5],
    position: +m[6],
  }));
}

test('a piped conversation: one compression, multi-turn cache, /reset back to the document, /stats, /quit', {
  skip,
}, () => {
  const q1 = 'What did Lily have?',
    q2 = 'Who helped her?';
  const r = chat([q1, q2, '/reset', q1, '/stats', '/quit', 'Is this read?'].join('\n') + '\n', '--n', '16');
  assert.equal(r.code, 0, r.err);
  assert.equal(r.err, '', 'nothing on stderr');
  const head = r.out.split('\n')[0];
  assert.match(
    head,
    /^\[document lily-and-the-red-kite\.txt: 375 tokens, ada-snapkv at budget 0\.2 \(75 tokens per head\), KV cache .* \(\d+\.\d% saved\); 137 of 512 context tokens free/,
  );
  assert.equal(r.out.match(/\[document /g)?.length, 1, 'the document is compressed once');

  const t = turns(r.out);
  assert.equal(t.length, 3, 'three questions answered; nothing after /quit');
  const [a, b, c] = t;
  assert.equal(a.turn, 1);
  assert.equal(a.position, 375 + a.prompt + a.answer, 'the first question goes after the document');
  assert.ok(a.answer >= 1 && a.answer <= 16);
  if (a.stop === 'length') assert.equal(a.answer, 16);
  assert.ok(a.text.trim().length > 0, 'an answer was printed');
  assert.equal(b.turn, 2);
  assert.equal(b.position, a.position + b.prompt + b.answer, 'the conversation accumulates in the cache');

  assert.match(r.out, /\[reset: conversation dropped, the compressed document kept; position 375 of 512\]/);
  assert.equal(c.turn, 1, 'the turn count starts over');
  assert.equal(c.prompt, a.prompt);
  assert.equal(c.position, a.position);
  assert.equal(
    c.text,
    a.text,
    'after /reset the same question gets the same (greedy) answer: the cache is the document again',
  );

  assert.match(r.out, /^layer\s+budget\s+kept per KV head\s+retained mass per head\s+eps\/C/m);
  assert.equal(r.out.match(/^\s+[0-4]\s+75\s+(\d+\s+){4}/gm)?.length, 5, 'one row per layer');
  assert.match(r.out, new RegExp(`\\[position ${c.position} of 512, cache [0-9.]+ MiB in use\\]`));
  // The order of events: answers, reset, answer, table.
  const order = ['[turn 1:', '[turn 2:', '[reset:', 'layer  budget'].map((s) => r.out.indexOf(s));
  assert.deepEqual(
    [...order].sort((x, y) => x - y),
    order,
  );
});

test('questions are answered as they arrive, before stdin ends (a terminal or a pipe kept open)', {
  skip,
}, async () => {
  const p = spawn(process.execPath, [folioJs, ...base, '--n', '8'], { stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let exited = false;
  p.on('exit', () => (exited = true));
  const seen = (re: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () =>
        re.test(out) ? resolve() : exited ? reject(new Error(`exited before ${re}: ${out}`)) : undefined;
      p.stdout.on('data', (d) => ((out += d), check()));
      p.on('exit', check);
      check();
    });
  await seen(/\[document /);
  p.stdin.write('Where did Lily go?\n');
  await seen(/\[turn 1: .*position \d+ of 512\]/);
  assert.equal(exited, false, 'still waiting for the next question');
  p.stdin.write('What happened next?\n');
  await seen(/\[turn 2: /);
  p.stdin.end('/quit\n');
  const code = await new Promise<number | null>((resolve) =>
    exited ? resolve(p.exitCode) : p.on('exit', (c) => resolve(c)),
  );
  assert.equal(code, 0);
});

test('a question that would overflow the context compresses the older turns; /reset drops the conversation', {
  skip,
}, () => {
  const q = 'What did Lily have?';
  const r = chat([q, q, q, '/reset', q].join('\n') + '\n', '--n', '40');
  assert.equal(r.code, 0, r.err);
  const t = turns(r.out);
  assert.equal(t.length, 4, r.out);
  assert.equal(t[1].position, t[0].position + t[1].prompt + t[1].answer);
  assert.ok(t[1].position + t[0].prompt + 1 > 512, 'the third question cannot fit beside both turns');
  // The two older turns were compressed together to half their positions (or what the third question needs),
  // the document kept (it ends at 375).
  assert.match(r.out, /\[turn 3: .*; the older 2 turns were compressed to make room\]/);
  const span = t[1].position - 375;
  const need = t[1].position + t[2].prompt + 1 - 512;
  assert.equal(t[2].position, 375 + Math.min(Math.floor(span / 2), span - need) + t[2].prompt + t[2].answer);
  assert.ok(t[2].position <= 512);
  assert.equal(t[3].turn, 1);
  assert.equal(t[3].position, t[0].position, 'after /reset the conversation starts over');
  assert.equal(t[3].text, t[0].text);
});

test('a document that leaves no room for a conversation is read as the app reads it; bad flags; an empty conversation', {
  skip,
}, () => {
  const mia = join(repoRoot, 'test/docs/mia-and-the-rainy-day.txt'); // 472 tokens
  let r = spawnSync(
    process.execPath,
    [folioJs, 'chat', '--model', stories, '--doc', mia, '--budget', '0.2', ...pinned],
    {
      encoding: 'utf8',
      input: 'Hi\n',
    },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /\[document mia-and-the-rainy-day\.txt: 472 tokens, .*\d+ of 512 context tokens free/);
  assert.match(r.stdout, /\[The document \(472 tokens.*re-based positions.*\]/);
  assert.match(r.stdout, /\[turn 1: /);
  r = spawnSync(process.execPath, [folioJs, 'chat', '--model', stories, '--doc', lily, '--positions', 'nowhere'], {
    encoding: 'utf8',
    input: '',
  });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--positions must be auto, own, packed, not 'nowhere'/);
  r = spawnSync(process.execPath, [folioJs, 'chat', '--model', stories, '--doc', lily, '--budget', '0.2', '--n', '0'], {
    encoding: 'utf8',
    input: '',
  });
  assert.equal(r.status, 2);
  const e = chat('');
  assert.equal(e.code, 0, e.err);
  assert.equal(e.out.split('\n').filter(Boolean).length, 1, 'the document line, then end of input ends the chat');
  const u = chat('/frobnicate\n/quit\n');
  assert.equal(u.code, 0);
  assert.match(u.err, /unknown command \/frobnicate/);
});

// stories260K with a chat template in its metadata, to run the template path end to end. Like Llama-3's, the
// template starts with bos_token itself and trims the answers it renders. (Chat templates are rendered with
// trim_blocks, as Hugging Face does: a newline right after a block tag is dropped, hence the string literal.)
const template =
  "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] }}" +
  "{% elif m['role'] == 'user' %}{{ '\\n\\nQuestion: ' + m['content'] + '\\nAnswer:' }}{% else %}{{ m['content'] | trim }}{{ eos_token }}{% endif %}{% endfor %}";

function withTemplate(): string {
  const dir = mkdtempSync(join(tmpdir(), 'folio-chat-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  const g = readGguf(stories);
  const metadata: [string, MetaValue][] = [...g.metadata].map(([key, value]) => {
    const t = g.types.get(key)!;
    return [
      key,
      t.type === ValueType.ARRAY
        ? arr(t.elementType!, value as (number | bigint | boolean | string)[])
        : { type: t.type as Exclude<ValueType, ValueType.ARRAY>, value: value as number | bigint | boolean | string },
    ];
  });
  metadata.push(['tokenizer.chat_template', template]);
  const path = join(dir, 'stories260K-chat.gguf');
  writeGguf(path, {
    alignment: g.alignment,
    metadata,
    tensors: g.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type, data: t.data })),
  });
  return path;
}

test('a model with a chat template: one BOS, rendered turns, a trimmed answer re-sent as rendered', { skip }, () => {
  const model = withTemplate();
  const r = spawnSync(
    process.execPath,
    [folioJs, 'chat', '--model', model, '--doc', lily, '--budget', '0.3', '--temp', '0', '--n', '12', ...pinned],
    { encoding: 'utf8', input: 'What did Lily have?\nWho helped her?\n/reset\nWhat did Lily have?\n' },
  );
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  // "<s>" + the document: the template's own BOS and nothing more, so the same 375 tokens as the plain format.
  assert.match(
    r.stdout,
    new RegExp(
      `^\\[document lily-and-the-red-kite\\.txt: 375 tokens \\(with the chat template\\), ${RECOMMENDED_METHOD} at budget 0\\.3 .*; chat template\\]\n`,
    ),
  );
  const [a, b, c] = turns(r.stdout);
  assert.equal(a.position, 375 + a.prompt + a.answer);
  assert.match(a.text, /^ \S/, 'stories260K starts its answer with a space, which the template trims away');
  // Turn 2 goes back to where the answer began and sends it as the template renders it (trimmed, then </s>).
  assert.ok(b.prompt > a.prompt, `the second prompt re-sends the answer: ${b.prompt} vs ${a.prompt} tokens`);
  assert.equal(b.position, a.position - a.answer + b.prompt + b.answer);
  assert.equal(c.position, a.position);
  assert.equal(c.text, a.text);
});

test("with no flags but the model and the document, a chat reads it as the app does: the app's defaults", {
  skip,
}, () => {
  // Issue 40: no --budget needed; the app's system prompt, compression, room and positions; the style by the
  // model (stories260K has no chat template: its lines continue the document).
  const r = spawnSync(
    process.execPath,
    [folioJs, 'chat', '--model', stories, '--doc', lily, '--temp', '0', '--n', '8'],
    {
      encoding: 'utf8',
      input: 'Lily had a\n',
    },
  );
  assert.equal(r.status, 0, r.stderr);
  const head = r.stdout.split('\n')[0];
  assert.match(
    head,
    new RegExp(
      `^\\[document lily-and-the-red-kite\\.txt: 407 tokens, ${RECOMMENDED_METHOD} at budget 0\\.2 .*; completion: each line continues the document\\]$`,
    ),
  );
  // 407 tokens with the app's system prompt leave the conversation less than its room: packed, as the app does.
  assert.match(
    r.stdout,
    /would leave the conversation 105 of 512 positions, less than its room of 128: its kept entries were packed/,
  );
  const [t] = turns(r.stdout);
  assert.ok(t && t.position < 407, `the conversation goes on after the packed document: position ${t?.position}`);
  // The line is continued where it stops ("Lily had a" + "n idea. She w" when this was written).
  assert.ok(t.text.length > 0 && t.stop === 'length', JSON.stringify(t));
});

test('--doc more than once: the documents read side by side, as a chat over a set in the app; /reset assembles them again', {
  skip: missing(sharedModel('needle-llama.gguf')),
}, () => {
  const dir = mkdtempSync(join(tmpdir(), 'folio-chat-set-'));
  try {
    const lilyCode = join(dir, 'lily.txt');
    const tom = join(dir, 'tom.txt');
    writeFileSync(
      lilyCode,
      'Once upon a time, there was a little girl named Lily. Lily had a red kite. The secret code is 8146. She loved to fly it.',
    );
    writeFileSync(
      tom,
      'Once upon a time, there was a boy named Tom. Tom heard a sad sound in the garden. Under a bush, there was a puppy.',
    );
    const r = spawnSync(
      process.execPath,
      [
        folioJs,
        'chat',
        '--model',
        sharedModel('needle-llama.gguf'),
        '--doc',
        lilyCode,
        '--doc',
        tom,
        '--n',
        '4',
        '--temp',
        '0',
      ],
      { encoding: 'utf8', input: 'What is the secret code? The secret code is \n/reset\n/stats\n' },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(
      r.stdout,
      /^\[document lily\.txt: \d+ tokens, .*\]\n\[document tom\.txt: .*\]\n\[2 documents side by side, at their own positions: \d+ of 1024 context tokens free/,
    );
    assert.match(r.stdout, /\n8146\n\[turn 1:/, 'the needle of the first document, answered over both');
    assert.match(r.stdout, /\[reset: conversation dropped, the compressed documents kept; position (\d+) of 1024\]/);
    assert.match(r.stdout, /\nlily\.txt:\n[\s\S]*\ntom\.txt:\n/, '/stats shows each document');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
