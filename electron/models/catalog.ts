// A short, curated list of small instruct models in GGUF (Q4_K_M) that Folio's engine runs, offered
// for download on first start. Sizes and SHA-256 digests are those Hugging Face shows for each file
// (the Git LFS pointer's oid and size; the same digest comes back as X-Linked-Etag on download):
//
// - Qwen2.5 0.5B / 1.5B / 3B Instruct: the Qwen team's own GGUF repos, Qwen/Qwen2.5-*-Instruct-GGUF.
//   0.5B: huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/blob/main/qwen2.5-0.5b-instruct-q4_k_m.gguf
//   (LFS SHA256 74a4da8c…, 491 MB). 1.5B and 3B: digests and byte sizes as recorded by several
//   public projects that pin these files (1,117,320,736 bytes, 6a1a2eb6…; 2,104,932,768 bytes, 626b4a66…).
// - Llama 3.2 1B / 3B Instruct: bartowski/Llama-3.2-*-Instruct-GGUF (Meta publishes no GGUF).
//   huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/blob/…/Llama-3.2-1B-Instruct-Q4_K_M.gguf
//   (LFS SHA256 6f85a640…, 808 MB = 807,694,464 bytes) and …/Llama-3.2-3B-Instruct-Q4_K_M.gguf
//   (LFS SHA256 6c1a2b41…, 2.02 GB = 2,019,377,696 bytes).
//
// The URLs point at `main`; if a repo ever replaces a file, the digest check fails and says so rather
// than keeping a different file. A digest left null makes the download check the X-Linked-Etag instead.
import { ApiError, type CatalogEntry } from '../api/contract.ts';

export const CATALOG: readonly CatalogEntry[] = [
  {
    id: 'qwen2.5-0.5b-instruct-q4_k_m',
    name: 'Qwen2.5 0.5B Instruct (Q4_K_M)',
    url: 'https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct-GGUF/resolve/main/qwen2.5-0.5b-instruct-q4_k_m.gguf',
    fileBytes: 491_400_032,
    sha256: '74a4da8c9fdbcd15bd1f6d01d621410d31c6fc00986f5eb687824e7b93d7a9db',
    description: 'The smallest and fastest: runs on any machine, fine for short documents. 32K context. Apache-2.0.',
  },
  {
    id: 'qwen2.5-1.5b-instruct-q4_k_m',
    name: 'Qwen2.5 1.5B Instruct (Q4_K_M)',
    url: 'https://huggingface.co/Qwen/Qwen2.5-1.5B-Instruct-GGUF/resolve/main/qwen2.5-1.5b-instruct-q4_k_m.gguf',
    fileBytes: 1_117_320_736,
    sha256: '6a1a2eb6d15622bf3c96857206351ba97e1af16c30d7a74ee38970e434e9407e',
    description: 'A good balance of speed and answer quality on a laptop. 32K context. Apache-2.0.',
  },
  {
    id: 'qwen2.5-3b-instruct-q4_k_m',
    name: 'Qwen2.5 3B Instruct (Q4_K_M)',
    url: 'https://huggingface.co/Qwen/Qwen2.5-3B-Instruct-GGUF/resolve/main/qwen2.5-3b-instruct-q4_k_m.gguf',
    fileBytes: 2_104_932_768,
    sha256: '626b4a6678b86442240e33df819e00132d3ba7dddfe1cdc4fbb18e0a9615c62d',
    description:
      'Better answers on longer documents; wants 8 GiB of memory or more. 32K context. Qwen Research License.',
  },
  {
    id: 'llama-3.2-1b-instruct-q4_k_m',
    name: 'Llama 3.2 1B Instruct (Q4_K_M)',
    url: 'https://huggingface.co/bartowski/Llama-3.2-1B-Instruct-GGUF/resolve/main/Llama-3.2-1B-Instruct-Q4_K_M.gguf',
    fileBytes: 807_694_464,
    sha256: '6f85a640a97cf2bf5b8e764087b1e83da0fdb51d7c9fab7d0fece9385611df83',
    description:
      "Meta's small model with a 128K context; light on memory (32 KiB of KV cache per token). Llama 3.2 Community License.",
  },
  {
    id: 'llama-3.2-3b-instruct-q4_k_m',
    name: 'Llama 3.2 3B Instruct (Q4_K_M)',
    url: 'https://huggingface.co/bartowski/Llama-3.2-3B-Instruct-GGUF/resolve/main/Llama-3.2-3B-Instruct-Q4_K_M.gguf',
    fileBytes: 2_019_377_696,
    sha256: '6c1a2b41161032677be168d354123594c0e6e67d2b9227c84f296ad037c728ff',
    description: 'Stronger answers with a 128K context; wants 8 GiB of memory or more. Llama 3.2 Community License.',
  },
];

/** A catalog entry by id; throws ApiError NOT_FOUND for an unknown id. */
export function catalogEntry(id: string): CatalogEntry {
  const e = CATALOG.find((x) => x.id === id);
  if (!e) throw new ApiError('NOT_FOUND', `no model '${id}' in the catalog (${CATALOG.map((x) => x.id).join(', ')})`);
  return e;
}
