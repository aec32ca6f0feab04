// Settings → API access: where other programs reach this Folio (folio serve) and the token they send. The
// desktop app serves no HTTP, so there the section is not shown.
import { useEffect, useState } from 'react';

import type { ServerInfo } from '../../../electron/api/contract.ts';
import { api, hasApi } from '../api/client.ts';
import { copyText } from '../lib/clipboard.ts';
import { notify } from '../stores/ui.ts';

async function copy(text: string, what: string) {
  if (await copyText(text)) notify(`${what} copied to the clipboard`, 'info');
  else notify('Could not copy: the clipboard is not available', 'error');
}

export function ApiAccess() {
  const [info, setInfo] = useState<ServerInfo | null>(null);
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
  const curl =
    `curl ${base}/chat/completions -H 'Authorization: Bearer ${info.apiToken}' -H 'Content-Type: application/json' ` +
    `-d '{"model":"folio","messages":[{"role":"user","content":"Hello"}]}'`;
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
