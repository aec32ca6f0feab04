// A term of the glossary (lib/glossary.ts): its label with its one-line explanation as a tooltip, and for
// screen readers as the term’s description.
import { GLOSSARY, type Term as TermId } from '../lib/glossary.ts';

export function Term({ id, children }: { id: TermId; children?: React.ReactNode }) {
  const t = GLOSSARY[id];
  return (
    <span className="term" title={t.explain} data-term={id} aria-description={t.explain}>
      {children ?? t.label}
    </span>
  );
}

/** The explanation as help text under a field or a heading. */
export function explain(id: TermId): string {
  return GLOSSARY[id].explain;
}
