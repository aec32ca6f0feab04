// Which files and folders a caller may name in a call. Three methods take paths (documents.import by path,
// models.add, and new model folders in settings.update); each transport that can carry a call from someone
// other than the app core's own code checks them against a policy of its own: the desktop's grants (only
// what the user chose in a dialog or dropped, shell/grants.ts) and the web host's allowed folders (only
// under the folders `folio serve --allow-dirs` names, web/allowed-folders.ts). The rule of which
// parameters are paths is written here once.
import { parseParams, type Params } from './contract.ts';

/** Each answers the path to use (the policy may resolve it), or throws an ApiError FORBIDDEN. */
export interface PathPolicy {
  document(path: string): string;
  model(path: string): string;
  folder(path: string): string;
}

/** What a transport needs of the app core. */
export interface DispatcherLike {
  dispatch(method: string, params: unknown): Promise<unknown>;
}

/**
 * Parses a call's parameters with the contract (so what is checked is exactly what the handler gets: a
 * union strips keys, `{ path, fileName, dataBase64 }` is an import by path) and passes every path in them
 * through `policy`. The model folders already in the settings (read through `core`) may stay.
 */
export async function checkPaths(
  method: string,
  params: unknown,
  policy: PathPolicy,
  core: DispatcherLike,
): Promise<unknown> {
  const parsed = parseParams(method, params);
  switch (method) {
    case 'documents.import': {
      const p = parsed as Params<'documents.import'>;
      return 'path' in p ? { ...p, path: policy.document(p.path) } : p;
    }
    case 'models.add': {
      const p = parsed as Params<'models.add'>;
      return { ...p, path: policy.model(p.path) };
    }
    case 'settings.update': {
      const p = parsed as Params<'settings.update'>;
      if (!p.modelFolders) return p;
      // Folders already in the settings may stay (or be removed); each new one must pass.
      const current = new Set(((await core.dispatch('settings.get', {})) as { modelFolders: string[] }).modelFolders);
      return { ...p, modelFolders: p.modelFolders.map((f) => (current.has(f) ? f : policy.folder(f))) };
    }
  }
  return parsed;
}
