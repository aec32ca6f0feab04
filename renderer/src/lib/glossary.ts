// The inspector's and the settings' terms, each with the one line that explains it: defined once, shown as
// help text and as the tooltip of the term wherever it appears (components/Term.tsx).

export const GLOSSARY = {
  budget: {
    label: 'Budget',
    explain:
      'How many of the document’s tokens a KV head may keep: a share of the document (0.2 = 20%) or a number of tokens per head, the observation window included.',
  },
  keptTokens: {
    label: 'Kept tokens',
    explain: 'Tokens of the document whose keys and values this head still holds after compression.',
  },
  retainedMass: {
    label: 'Retained attention',
    explain:
      'Share of the observation window’s attention that falls on the tokens a head kept: 100% means nothing the head looked at was dropped.',
  },
  concentration: {
    label: 'Concentration',
    explain:
      'Share of the document’s tokens that hold 90% of a head’s attention: low means the head looks at few tokens, high means it spreads out.',
  },
  epsOverC: {
    label: 'Layer bound ε/C',
    explain:
      'Ada-KV’s bound on how much the layer’s output can change, 2 × (heads − Σ retained attention): lower is better, 0 means nothing was lost.',
  },
  window: {
    label: 'Observation window',
    explain:
      'The document’s last tokens: their attention scores every other token, and every head keeps them (they are not chosen).',
  },
  kernel: {
    label: 'Pooling kernel',
    explain:
      'Scores are smoothed over this many neighbouring tokens (odd), so a head keeps phrases rather than lone tokens.',
  },
  alpha: {
    label: 'Safeguard α',
    explain: 'The share of a layer’s budget every head gets whatever its need, before Ada-KV shares the rest by need.',
  },
  beta: {
    label: 'Pyramid steepness β',
    explain: 'How fast the pyramid schedule shrinks the budget from the first layers to the last.',
  },
  kvHead: {
    label: 'KV head',
    explain: 'One of a layer’s key-value heads: each keeps its own tokens, and several query heads may read it.',
  },
  attnL1: {
    label: 'Attention L1 loss',
    explain:
      'How far the window queries’ attention output moved once the cache was compressed (L1 norm): lower is better.',
  },
  memory: {
    label: 'Memory',
    explain: 'The bytes of the keys and values the cache holds for this document, against the uncompressed cache.',
  },
  positions: {
    label: 'Positions',
    explain:
      'The places the document takes in the model’s context; a re-based read gives the kept tokens contiguous positions.',
  },
  cachePeak: {
    label: 'Cache peak',
    explain: 'The most the cache held during a chunked read, against the bound a chunked read keeps under.',
  },
  layerTime: {
    label: 'Layer time',
    explain: 'Time spent on this layer’s compression: scoring the tokens, choosing, and compacting the cache.',
  },
} as const satisfies Record<string, { label: string; explain: string }>;

export type Term = keyof typeof GLOSSARY;
