// Settings → API access: where other programs reach this Folio (folio serve) and the token they send. The
// desktop app serves no HTTP, so there the section is not shown.
import { useEffect, useState } from 'react';

import type { ModelEntry, ServerInfo } from '../../../electron/api/contract.ts';
import { api, hasApi } from '../api/client.ts';
import { copyText } from '../lib/clipboard.ts';
import { useModels } from '../stores/models.ts';
import { useSettings } from '../stores/settings.ts';
import { notify } from '../stores/ui.ts';

async function copy(text: string, what: string) {
  if (await copyText(text)) notify(`${what} copied to the clipboard`, 'info');
  else notify('Could not copy: the clipboard is not available', 'error');
}

/**
 * The model the example names, as GET /v1/models lists it (by name, supported models only): the chat model,
 * else the first listed; 'folio' (the server's alias for the chat model) only when none is listed.
 */
export function exampleModelName(list: ModelEntry[], modelId: string | null): string {
  const listed = list.filter((m) => m.supported);
  return (listed.find((m) => m.id === modelId) ?? listed[0])?.name ?? 'folio';
}

export function ApiAccess() {
  const [info, setInfo] = useState<ServerInfo | null>(null);
  const modelId = useSettings((s) => s.settings?.modelId ?? null);
  const model = useModels((s) => exampleModelName(s.list, modelId));
  useEffect(() => {
    let live = true;
    if (hasApi())
      api()
        .call('server.info', {})
        .then(
          (i) => live && setInfo(i),
          () => {},
        );
    return () => {
      live = false;
    };
  }, []);
  if (!info?.apiUrl || !info.apiToken) return null;
  const base = `${info.apiUrl}/v1`;
  const body = JSON.stringify({ model, messages: [{ role: 'user', content: 'Hello' }] });
  const curl =
    `curl ${base}/chat/completions -H 'Authorization: Bearer ${info.apiToken}' -H 'Content-Type: application/json' ` +
    `-d '${body.replaceAll("'", "'\\''")}'`;
  return (
    <section className="card" aria-labelledby="api-heading" data-testid="api-access">
      <h3 id="api-heading">API access</h3>
      <p className="small muted">
        Other programs (OpenAI clients, scripts) reach Folio here with this token as their API key. Keep it private: it
        lets them use your library.
      </p>
      <div className="field">
        <span className="label-like">Base URL</span>
        <code data-testid="api-url">{base}</code>
      </div>
      <div className="field">
        <label htmlFor="api-token">Token</label>
        <div className="inline-row">
          <input
            id="api-token"
            type="text"
            readOnly
            value={info.apiToken}
            spellCheck={false}
            onFocus={(e) => e.target.select()}
          />
          <button type="button" className="button" onClick={() => void copy(info.apiToken!, 'The token')}>
            Copy
          </button>
        </div>
      </div>
      <div className="field">
        <span className="label-like">Example</span>
        <code className="small" data-testid="api-example">
          {curl}
        </code>
      </div>
    </section>
  );
}
