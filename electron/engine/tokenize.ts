// Tokenization with piece lengths, shared by the host (short texts, on its main thread) and the tokenizer
// worker (long texts): the same code over a Model or a Vocab of the same file gives the same answer.
import type { Model, Vocab } from './binding.ts';

/** The part of a Model or a Vocab this needs. */
export interface Tokenizer {
  tokenize(text: string, opts?: { addSpecial?: boolean; parseSpecial?: boolean }): Int32Array;
  tokenToPiece(id: number, special?: boolean): Uint8Array;
  detokenize(ids: ArrayLike<number>, opts?: { special?: boolean }): string;
}

export interface SpecialIds {
  nTokens: number;
  bos: number;
  eos: number;
  addBos: boolean;
  addEos: boolean;
}

/** Piece byte lengths per token id, filled as ids are met (-1: not yet known); one per rendering of specials. */
export class PieceLengths {
  private readonly plain: Int32Array;
  private readonly special: Int32Array;
  constructor(
    private readonly tok: Tokenizer,
    readonly ids: SpecialIds,
  ) {
    this.plain = new Int32Array(ids.nTokens).fill(-1);
    this.special = new Int32Array(ids.nTokens).fill(-1);
  }

  /**
   * Byte length of each token's piece. Special tokens are rendered when the text was parsed for them (then a
   * control token stands for text that was there); BOS / EOS that tokenize added count 0.
   */
  of(tokens: Int32Array, opts: { addSpecial?: boolean; parseSpecial?: boolean }): Int32Array {
    const special = opts.parseSpecial ?? false;
    const cache = special ? this.special : this.plain;
    const out = new Int32Array(tokens.length);
    for (let i = 0; i < tokens.length; i++) {
      const id = tokens[i];
      let n = id >= 0 && id < cache.length ? cache[id] : -1;
      if (n < 0) {
        n = this.tok.tokenToPiece(id, special).length;
        if (id >= 0 && id < cache.length) cache[id] = n;
      }
      out[i] = n;
    }
    if (opts.addSpecial ?? true) {
      if (this.ids.addBos && tokens.length > 0 && tokens[0] === this.ids.bos) out[0] = 0;
      if (this.ids.addEos && tokens.length > 0 && tokens[tokens.length - 1] === this.ids.eos)
        out[tokens.length - 1] = 0;
    }
    return out;
  }
}

export function specialIdsOfModel(model: Model): SpecialIds {
  const t = model.info().tokenizer;
  return { nTokens: t.nTokens, bos: t.bos, eos: t.eos, addBos: t.addBos, addEos: t.addEos };
}

export function specialIdsOfVocab(vocab: Vocab): SpecialIds {
  const v = vocab.info();
  return { nTokens: v.nTokens, bos: v.bos, eos: v.eos, addBos: v.addBos, addEos: v.addEos };
}

export function tokenizeWithPieces(
  tok: Tokenizer,
  pieces: PieceLengths,
  text: string,
  opts: { addSpecial?: boolean; parseSpecial?: boolean },
): { tokens: Int32Array; pieceBytes: Int32Array } {
  const tokens = tok.tokenize(text, { addSpecial: opts.addSpecial ?? true, parseSpecial: opts.parseSpecial ?? false });
  return { tokens, pieceBytes: pieces.of(tokens, opts) };
}
