// folio info
import { type Command, common, int, openModel, PRECISION_USAGE, print, sessionOptions } from '../args.ts';
import { DEFAULT_CONTEXT_TOKENS } from '../../api/contract.ts';
import { kvBytesPerToken, shapeFromInfo } from '../../models/estimate.ts';
import { kvFormat, kvFormatName } from '../../shared/kv/precision.ts';

export const info: Command = {
  summary: 'architecture, sizes, tensor types, tokenizer and memory of a model',
  usage: `folio info --model M.gguf [--ctx N] ${PRECISION_USAGE} [--json]`,
  options: { ...common },
  async run(v) {
    const model = await openModel(v);
    const info = model.info();
    const nCtx = int(v, 'ctx', Math.min(info.contextLength, DEFAULT_CONTEXT_TOKENS), 1);
    const kv = kvFormat(sessionOptions(v));
    const kvType = kvFormatName(kv);
    const kvBytes = nCtx * kvBytesPerToken(shapeFromInfo(info), kv);
    const memory = { weightBytes: info.weightBytes, kvBytes, kvType, nCtx, totalBytes: info.weightBytes + kvBytes };
    const gib = (b: number) => (b / 2 ** 30).toFixed(2) + ' GiB';
    const types = Object.entries(info.tensorTypes)
      .map(([t, n]) => `${t}×${n}`)
      .join(' ');
    print(
      v,
      { ...info, chatTemplate: info.chatTemplate || null, memory },
      [
        `${info.name || info.path}`,
        `  architecture  ${info.architecture}, ${(info.nParams / 1e6).toFixed(2)}M parameters, ${types}`,
        `  shape         ${info.nLayer} layers, embedding ${info.nEmbd}, ${info.nHead} query heads, ${info.nHeadKv} KV heads, head ${info.headDim}, FFN ${info.nFf}`,
        `  context       ${info.contextLength} tokens, rope base ${info.ropeBase}, scaling ${info.ropeScaling}`,
        `  tokenizer     ${info.tokenizer.model}/${info.tokenizer.pre}, ${info.tokenizer.nTokens} tokens, BOS ${info.tokenizer.bos}${info.tokenizer.addBos ? ' (added)' : ''}, EOS ${info.tokenizer.eos}`,
        `  memory        weights ${gib(info.weightBytes)} (mapped) + KV cache ${gib(kvBytes)} at ${nCtx} tokens (${kvType}, uncompressed)`,
        `  kernels       ${info.isa}`,
        `  backend       ${info.backend}: ${info.backendReason}`,
        '',
      ].join('\n'),
    );
  },
};
