// A scanned PDF in Debian's Chromium (issue 42), against the real web host, app core and engine: a PDF whose
// pages are pictures alone (made here: text typeset, drawn to pixels, put back as images) is read by OCR at
// import, answered from (needle-llama copies the digits after "is "), and the answer's citation highlights the
// recognised sentence on the rendered scan, where the words are; the thumbnails say the pages were read by OCR.
// Every scan here asks before its OCR (the app's limit set to nothing): the first is imported with its pages
// chosen up front through the API, the second stops in the library for the choice, made in the UI: a range.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';

import { e2eApp, e2eSkip, needleSettings, shots } from './helpers/e2e-host.ts';
import { scannedPdf } from './helpers/make-pdf.ts';
import { sharedModel } from './helpers/shared.ts';

const model = sharedModel('needle-llama.gguf');
const skip = e2eSkip(model);
const CODE = '7306';

const app = e2eApp({
  name: 'ocr',
  model,
  apiToken: 'e2e-ocr-token-0123456789abcdef',
  skip,
  viewport: { width: 1400, height: 900 },
  core: { ocrAskOverSeconds: 0 },
  beforePage: needleSettings,
  ready: async ({ api, page }) => {
    const pdf = await scannedPdf(
      [
        'Mia liked rainy days because the puddles were deep enough to jump in.',
        `She found a note under her boot. The secret code is ${CODE}. She kept it in her pocket all day.`,
      ],
      { title: 'A scanned note' },
    );
    await api.call('documents.import', {
      fileName: 'scan.pdf',
      dataBase64: Buffer.from(pdf).toString('base64'),
      ocrPages: 'all',
    });
    await page.getByTestId('document').filter({ hasText: 'Ready' }).first().waitFor({ timeout: 120_000 });
  },
});

const shot = (name: string) => app.page.screenshot({ path: join(shots, `ocr-${name}.png`) });

test('a scanned PDF is read by OCR: answered from, and the citation lands on the scan where the words are', {
  skip,
}, async () => {
  await app.page.getByTestId('document').first().click();
  const box = app.page.getByRole('textbox', { name: /^Ask about/ });
  await box.fill('What is the secret code? The secret code is ');
  await box.press('Enter');
  const answer = app.page.locator('[data-testid="msg-assistant"][data-status="complete"]');
  await answer.waitFor({ timeout: 60_000 });
  assert.match((await answer.locator('.markdown').innerText()).trim(), new RegExp(`^${CODE}`));
  const chip = answer.getByRole('button', { name: /page 2/ });
  await chip.first().click();
  await app.page.getByRole('tab', { name: 'Document', selected: true }).waitFor();
  // The scan's text layer is its recognised words; the cited sentence is marked on them.
  const cited = app.page.locator('[data-testid="pdf-page"][data-page="2"] .textLayer .cited');
  await cited.first().waitFor({ timeout: 30_000 });
  assert.match((await cited.allInnerTexts()).join(' '), new RegExp(CODE), 'the highlight holds the code');
  // Where the words are: the marked span lies on the page, in the top half where the text was typeset.
  const pageBox = (await app.page.locator('[data-testid="pdf-page"][data-page="2"]').boundingBox())!;
  const mark = (await cited.first().boundingBox())!;
  assert.ok(mark.y > pageBox.y && mark.y < pageBox.y + pageBox.height / 3, JSON.stringify({ pageBox, mark }));
  assert.ok(mark.x > pageBox.x && mark.x + mark.width < pageBox.x + pageBox.width);
  // The read note and the thumbnails say the pages were read by OCR.
  await app.page.getByTestId('ocr-note').first().waitFor();
  assert.match(await app.page.getByTestId('ocr-note').first().innerText(), /Pages 1–2 were read by OCR \(English\)/);
  assert.equal(await app.page.getByTestId('thumb-ocr').count(), 2);
  await shot('01-cited-on-scan');
  assert.deepEqual(app.errors, []);
});

test('a long scan stops in the library before its OCR: the pages and the time are shown, and a range chosen there is read', {
  skip,
}, async () => {
  const pdf = await scannedPdf([
    'The first page tells of a lighthouse on a rocky island far to the north.',
    'The second page tells of the keeper, who lit the lamp every evening at dusk.',
    'The third page tells of a storm that lasted three whole days and nights.',
  ]);
  await app.api.call('documents.import', {
    fileName: 'long scan.pdf',
    dataBase64: Buffer.from(pdf).toString('base64'),
  });
  const card = app.page.getByTestId('document').filter({ hasText: 'long scan' });
  const choice = card.getByTestId('ocr-choice');
  await choice.waitFor({ timeout: 60_000 });
  const said = await choice.innerText();
  assert.match(said, /3 pages without a text layer to read by OCR/);
  assert.match(said, /about \d+ s on this computer/, said);
  await shot('02-choice-before-ocr');
  // Page 2 alone: from page 2, to page 2.
  await choice.getByLabel('From page').selectOption('2');
  await choice.getByLabel('to page').selectOption('2');
  await choice.getByRole('button', { name: /^Read page 2 / }).click();
  await card.filter({ hasText: 'Ready' }).waitFor({ timeout: 120_000 });
  assert.equal(await choice.count(), 0, 'the choice is gone once made');
  await card.getByRole('button').first().click();
  await app.page.getByRole('tab', { name: 'Document' }).click();
  const note = app.page.getByTestId('ocr-note').first();
  await note.waitFor();
  assert.match(await note.innerText(), /Page 2 was read by OCR \(English\).*pages 1, 3 were not read/s);
  const thumbs = app.page.getByTestId('thumb-ocr');
  await thumbs.first().waitFor();
  assert.deepEqual(await thumbs.allInnerTexts(), ['no OCR', 'OCR', 'no OCR']);
  await shot('03-range-read');
  assert.deepEqual(app.errors, []);
});
