// DOCX fixtures made in the test with the `docx` package: headings, styled runs, a nested bullet list, a
// numbered list, a table with a header row and a two-paragraph cell, a footnote, and optionally many
// sections (for paging).
import {
  AlignmentType,
  Document,
  FootnoteReferenceRun,
  HeadingLevel,
  LevelFormat,
  Packer,
  Paragraph,
  Table,
  TableCell,
  TableRow,
  TextRun,
} from 'docx';

export async function sampleDocx(opts: { title?: string; sections?: number } = {}): Promise<Uint8Array> {
  const extra: Paragraph[] = [];
  for (let s = 1; s <= (opts.sections ?? 0); s++) {
    extra.push(new Paragraph({ text: `Section ${s}`, heading: HeadingLevel.HEADING_2 }));
    for (let k = 0; k < 4; k++) {
      extra.push(
        new Paragraph(
          `Paragraph ${k + 1} of section ${s}. ` + 'This sentence fills the section with ordinary text. '.repeat(6),
        ),
      );
    }
  }
  const doc = new Document({
    ...(opts.title ? { title: opts.title } : {}),
    numbering: {
      config: [
        {
          reference: 'steps',
          levels: [{ level: 0, format: LevelFormat.DECIMAL, text: '%1.', alignment: AlignmentType.START }],
        },
      ],
    },
    footnotes: { 1: { children: [new Paragraph('A footnote about the café.')] } },
    sections: [
      {
        children: [
          new Paragraph({ text: 'Annual Garden Report', heading: HeadingLevel.TITLE }),
          new Paragraph({ text: 'Introduction', heading: HeadingLevel.HEADING_1 }),
          new Paragraph({
            children: [
              new TextRun('The garden grew '),
              new TextRun({ text: 'very well', bold: true }),
              new TextRun(' this year, café au lait & <roses>.'),
              new FootnoteReferenceRun(1),
            ],
          }),
          new Paragraph({ text: 'Tomatoes', bullet: { level: 0 } }),
          new Paragraph({ text: 'Cherry tomatoes', bullet: { level: 1 } }),
          new Paragraph({ text: 'Beans', bullet: { level: 0 } }),
          new Paragraph({ text: 'Dig the soil', numbering: { reference: 'steps', level: 0 } }),
          new Paragraph({ text: 'Plant the seeds', numbering: { reference: 'steps', level: 0 } }),
          new Paragraph({ text: 'Harvest', heading: HeadingLevel.HEADING_2 }),
          new Table({
            rows: [
              new TableRow({
                tableHeader: true,
                children: ['Crop', 'Kilograms'].map((t) => new TableCell({ children: [new Paragraph(t)] })),
              }),
              new TableRow({
                children: [
                  new TableCell({ children: [new Paragraph('Tomatoes'), new Paragraph('(red)')] }),
                  new TableCell({ children: [new Paragraph('42')] }),
                ],
              }),
              new TableRow({ children: ['Beans', '17'].map((t) => new TableCell({ children: [new Paragraph(t)] })) }),
            ],
          }),
          new Paragraph('The end of the report.'),
          ...extra,
        ],
      },
    ],
  });
  return new Uint8Array(await Packer.toBuffer(doc));
}
