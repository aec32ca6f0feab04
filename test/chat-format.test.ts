// The chat prompt format of `folio chat` (electron/services/chat-format.ts): real Llama-3 and ChatML templates
// rendered with @huggingface/jinja, the turn-by-turn suffix logic, and BOS handling.
import { test } from 'node:test';
import assert from 'node:assert/strict';

import {
  ChatFormatError,
  Conversation,
  formatTokens,
  plainRenderer,
  systemContent,
  templateRenderer,
  type Tokenize,
} from '../electron/services/chat-format.ts';
import { loadAddon } from '../electron/engine/binding.ts';
import { missing, sharedModel } from './helpers/shared.ts';

// Meta-Llama-3-8B-Instruct's tokenizer_config.json chat_template.
const llama3 =
  "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + " +
  "'<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}" +
  "{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}";

// ChatML as Qwen2 ships it (without the default system message branch): no bos_token anywhere.
const chatml =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

const doc = 'Once upon a time, there was a little girl named Lily.\nShe had a red kite.';

/** Plays a conversation the way `folio chat` does and returns the text the cache ends up holding. */
function play(c: Conversation, turns: [string, string][]): { cache: string; prompts: string[] } {
  let cache = c.prefixText;
  const prompts: string[] = [];
  for (const [q, a] of turns) {
    const plan = c.plan(q);
    assert.equal(plan.dropLastAnswer, false);
    prompts.push(plan.text);
    cache += plan.text;
    c.accept(plan);
    c.answered(a);
    cache += a;
    assert.equal(c.text, cache);
  }
  return { cache, prompts };
}

test('Llama-3: the prefix is the system message with one BOS; each turn appends only the new part', () => {
  const render = templateRenderer(llama3, { bos: '<|begin_of_text|>', eos: '<|end_of_text|>' });
  const c = new Conversation(render, systemContent(doc, 'Answer from the document.'));
  assert.equal(
    c.prefixText,
    `<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nAnswer from the document.\n\n${doc}<|eot_id|>`,
  );
  assert.equal(c.prefixText.split('<|begin_of_text|>').length - 1, 1, 'BOS once, from the template');
  const { cache, prompts } = play(c, [
    ['What did Lily have?', 'A red kite.'],
    ['What colour?', 'Red.'],
  ]);
  assert.equal(
    prompts[0],
    '<|start_header_id|>user<|end_header_id|>\n\nWhat did Lily have?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
  );
  // The second prompt starts with the end-of-turn token the model stopped at (generation does not feed it back).
  assert.equal(
    prompts[1],
    '<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhat colour?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
  );
  // Prefix + prompts + answers is exactly the rendered conversation.
  const whole = render(
    [
      { role: 'system', content: systemContent(doc, 'Answer from the document.') },
      { role: 'user', content: 'What did Lily have?' },
      { role: 'assistant', content: 'A red kite.' },
      { role: 'user', content: 'What colour?' },
      { role: 'assistant', content: 'Red.' },
    ],
    false,
  );
  assert.equal(whole, cache + '<|eot_id|>');
});

test('Llama-3 trims answers: an answer generated with whitespace is dropped from the cache and re-sent as rendered', () => {
  const c = new Conversation(templateRenderer(llama3, { bos: '<|begin_of_text|>', eos: '<|end_of_text|>' }), doc);
  const first = c.plan('Who?');
  c.accept(first);
  const before = c.text;
  c.answered('Lily.\n');
  const plan = c.plan('Why?');
  assert.equal(plan.dropLastAnswer, true);
  assert.equal(
    plan.text,
    'Lily.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWhy?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n',
  );
  c.accept(plan);
  assert.equal(c.text, before + plan.text);
});

test('ChatML: no BOS in the text; suffixes; reset goes back to the document', () => {
  const render = templateRenderer(chatml, { bos: '<s>', eos: '<|im_end|>' });
  const c = new Conversation(render, doc);
  assert.equal(c.prefixText, `<|im_start|>system\n${doc}<|im_end|>\n`);
  const { prompts } = play(c, [
    ['Who is Lily?', 'A girl.'],
    ['And?', 'She has a kite.'],
  ]);
  assert.deepEqual(prompts, [
    '<|im_start|>user\nWho is Lily?<|im_end|>\n<|im_start|>assistant\n',
    '<|im_end|>\n<|im_start|>user\nAnd?<|im_end|>\n<|im_start|>assistant\n',
  ]);
  assert.equal(c.turns, 2);
  c.reset();
  assert.equal(c.text, c.prefixText);
  assert.equal(c.turns, 0);
  assert.equal(c.plan('Who is Lily?').text, prompts[0]);
});

test('a template that does not extend the cached text is refused clearly, and nothing changes', () => {
  // Puts the number of messages in front of everything: every rendering rewrites the start.
  const counting =
    "{{ bos_token }}{{ messages | length }}{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}";
  const c = new Conversation(templateRenderer(counting, { bos: '<s>', eos: '</s>' }), doc);
  const before = c.text;
  assert.throws(
    () => c.plan('Who?'),
    (e: Error) =>
      e instanceof ChatFormatError &&
      /does not extend the text already in the cache/.test(e.message) &&
      /\/reset/.test(e.message),
  );
  assert.equal(c.text, before);
  assert.throws(() => templateRenderer('{% for %}', { bos: '', eos: '' }), ChatFormatError);
});

test('the plain format (models without a template): document, then Question/Answer turns', () => {
  const c = new Conversation(plainRenderer, systemContent(doc, 'Be brief.'));
  assert.equal(c.prefixText, `Be brief.\n\n${doc}`);
  const { cache, prompts } = play(c, [
    ['Who?', ' Lily.'],
    ['What?', ' A kite.'],
  ]);
  assert.deepEqual(prompts, ['\n\nQuestion: Who?\nAnswer:', '\n\nQuestion: What?\nAnswer:']);
  assert.equal(cache, `Be brief.\n\n${doc}\n\nQuestion: Who?\nAnswer: Lily.\n\nQuestion: What?\nAnswer: A kite.`);
  assert.equal(systemContent(doc), doc);
  assert.equal(systemContent(doc, '  '), doc);
});

// A toy tokenizer: special-token text becomes its id when parsed, every other character its code point
// (+1000); addSpecial puts BOS (1) in front, as a model with add_bos does.
const specials: Record<string, number> = {
  '<|begin_of_text|>': 1,
  '<|eot_id|>': 2,
  '<|im_start|>': 3,
  '<|im_end|>': 4,
  '<|start_header_id|>': 5,
  '<|end_header_id|>': 6,
};
const toy: Tokenize = (text, o) => {
  const out: number[] = o.addSpecial ? [1] : [];
  for (let i = 0; i < text.length; ) {
    const s = o.parseSpecial ? Object.keys(specials).find((k) => text.startsWith(k, i)) : undefined;
    if (s) {
      out.push(specials[s]);
      i += s.length;
    } else out.push(1000 + text.codePointAt(i++)!);
  }
  return Int32Array.from(out);
};

test('BOS: added once to the prefix, never twice, never to a turn; special text in the plain format stays text', () => {
  const bos = { id: 1, add: true };
  const l3 = new Conversation(templateRenderer(llama3, { bos: '<|begin_of_text|>', eos: '<|end_of_text|>' }), doc);
  const t = formatTokens(toy, l3.prefixText, { template: true, first: true, bos });
  assert.equal(t[0], 1);
  assert.notEqual(t[1], 1, 'the template already starts with BOS: no second one');
  assert.equal(t[1], 5, '<|start_header_id|> parsed as a special token');
  const cm = new Conversation(templateRenderer(chatml, { bos: '<|begin_of_text|>', eos: '<|im_end|>' }), doc);
  const c = formatTokens(toy, cm.prefixText, { template: true, first: true, bos });
  assert.deepEqual(Array.from(c.slice(0, 2)), [1, 3], "ChatML has no BOS in its text: the model's BOS goes in front");
  assert.equal(
    formatTokens(toy, cm.prefixText, { template: true, first: true, bos: { id: 1, add: false } })[0],
    3,
    'no BOS when the model wants none',
  );
  const turn = formatTokens(toy, cm.plan('Hi').text, { template: true, first: false, bos });
  assert.equal(turn[0], 3, 'a turn gets no BOS');
  const plain = formatTokens(toy, 'a<|im_end|>', { template: false, first: true, bos });
  assert.equal(plain[0], 1);
  assert.equal(plain.length, 1 + 'a<|im_end|>'.length, 'special-token text in a document is not parsed');
  assert.equal(formatTokens(toy, 'x', { template: false, first: false, bos })[0], 1000 + 'x'.codePointAt(0)!);
});

const spmVocab = sharedModel('vocab/ggml-vocab-llama-spm.gguf');
test('BOS with a real tokenizer: a Llama-2-style template that writes <s> itself gets no second BOS', {
  skip: missing(spmVocab),
}, () => {
  const vocab = loadAddon().openVocab(spmVocab);
  const info = vocab.info();
  const tpl =
    "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'user' %}[INST] {{ m['content'] }} [/INST]{% else %}{{ m['content'] }}{% endif %}{% endfor %}";
  const c = new Conversation(templateRenderer(tpl, { bos: '<s>', eos: '</s>' }), doc);
  const tokenize: Tokenize = (text, o) => vocab.tokenize(text, o);
  const t = formatTokens(tokenize, c.prefixText, {
    template: true,
    first: true,
    bos: { id: info.bos, add: info.addBos },
  });
  assert.equal(info.addBos, true);
  assert.equal(t[0], info.bos);
  assert.equal(t.filter((x) => x === info.bos).length, 1);
  assert.ok(c.prefixText.startsWith('<s>'));
  const rest = vocab.tokenize(c.prefixText.slice('<s>'.length), { addSpecial: false, parseSpecial: false });
  assert.deepEqual(Array.from(t), [info.bos, ...rest], "the template's <s> is the BOS token, not text");
  const plain = formatTokens(tokenize, doc, { template: false, first: true, bos: { id: info.bos, add: info.addBos } });
  assert.deepEqual(
    Array.from(plain),
    Array.from(vocab.tokenize(doc)),
    'the plain prefix is tokenized as `folio compress` does',
  );
});
