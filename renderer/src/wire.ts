// Connects the stores to the API: every event the core pushes goes to its store, and the first data is
// loaded. In a browser a lost connection is shown, and everything is loaded again when it comes back
// (events missed meanwhile are not replayed).
import type { WsApi } from '../../electron/api/ws-client.ts';
import { api, errorMessage, setApi, type FolioBridge } from './api/client.ts';
import { onDocumentOpened, runMenuAction } from './stores/actions.ts';
import { onChatMessage, onChatToken, refreshChat, useChats, loadChats } from './stores/chats.ts';
import { loadDocuments, loadDetail, removeDocument, upsertDocument, useDocuments } from './stores/documents.ts';
import { setConnected, setEngineStatus } from './stores/engine.ts';
import { loadModels, setModels } from './stores/models.ts';
import { loadSettings, setSettings } from './stores/settings.ts';
import { onTaskDone, onTaskProgress } from './stores/tasks.ts';
import { useUi } from './stores/ui.ts';

export async function loadAll(): Promise<void> {
  const a = api();
  const results = await Promise.allSettled([
    loadSettings(),
    a.call('engine.status', {}).then(setEngineStatus),
    loadDocuments(),
    loadModels(),
  ]);
  const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
  if (failed) throw failed.reason;
  const { documentId, chatId } = useUi.getState();
  if (documentId) {
    await loadChats(documentId);
    if (useDocuments.getState().details[documentId]) void loadDetail(documentId);
  }
  if (chatId && useChats.getState().order[chatId]) await refreshChat(chatId);
}

/** Subscribes the stores to the API's events and loads the first data; returns the unsubscribe. */
export function startApp(
  bridge: FolioBridge,
  ws: WsApi | null,
  onLoadError: (message: string) => void = () => {},
): () => void {
  setApi(bridge);
  const offs = [
    bridge.on('engine.status', setEngineStatus),
    bridge.on('task.progress', onTaskProgress),
    bridge.on('task.done', (d) => onTaskDone(d, d.documentId ? useDocuments.getState().byId[d.documentId] : undefined)),
    bridge.on('documents.changed', upsertDocument),
    bridge.on('documents.deleted', (p) => removeDocument(p.documentId)),
    bridge.on('models.changed', setModels),
    bridge.on('chat.token', onChatToken),
    bridge.on('chat.message', onChatMessage),
    bridge.on('settings.changed', setSettings),
  ];
  if (bridge.shell) offs.push(bridge.shell.onMenu(runMenuAction), bridge.shell.onDocumentOpened(onDocumentOpened));
  if (ws) {
    setConnected(ws.connected);
    let lost = false;
    offs.push(
      ws.onConnection((c) => {
        setConnected(c);
        if (!c) lost = true;
        else if (lost) loadAll().catch((e) => onLoadError(errorMessage(e)));
      }),
    );
  }
  loadAll().catch((e) => onLoadError(errorMessage(e)));
  return () => offs.forEach((off) => off());
}
