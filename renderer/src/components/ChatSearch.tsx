// Search across chats, in the chat list: the messages holding the words typed, in this document's chats
// or in every document's; a hit opens its chat at the message.
import { useEffect, useState } from 'react';

import type { ChatSearchHit } from '../../../electron/api/contract.ts';
import { openHit, searchChats } from '../stores/chats.ts';

/** Typing settles this long before a search is sent. */
const SEARCH_DELAY_MS = 250;

function Snippet({ hit }: { hit: ChatSearchHit }) {
  const { snippet: s, matchStart: a, matchEnd: b } = hit;
  return (
    <span className="hit-snippet">
      {s.slice(0, a)}
      <mark>{s.slice(a, b)}</mark>
      {s.slice(b)}
    </span>
  );
}

export function ChatSearch({ documentId }: { documentId: string }) {
  const [query, setQuery] = useState('');
  const [everywhere, setEverywhere] = useState(false);
  const [hits, setHits] = useState<ChatSearchHit[] | null>(null);
  const q = query.trim();
  useEffect(() => {
    if (!q) {
      setHits(null);
      return;
    }
    let current = true;
    const t = setTimeout(async () => {
      const r = await searchChats(q, everywhere ? null : documentId);
      if (current) setHits(r);
    }, SEARCH_DELAY_MS);
    return () => {
      current = false;
      clearTimeout(t);
    };
  }, [q, everywhere, documentId]);
  return (
    <div className="chat-search">
      <label className="sr-only" htmlFor="chat-search">
        Search chats
      </label>
      <input
        id="chat-search"
        type="search"
        placeholder="Search chats"
        value={query}
        onChange={(e) => setQuery(e.target.value)}
        onKeyDown={(e) => e.key === 'Escape' && setQuery('')}
        maxLength={200}
      />
      {q && (
        <label className="small search-scope">
          <input type="checkbox" checked={everywhere} onChange={(e) => setEverywhere(e.target.checked)} /> all documents
        </label>
      )}
      {hits && (
        <ul className="search-hits" aria-label="Search results">
          {hits.length === 0 && <li className="muted small">Nothing found.</li>}
          {hits.map((h) => (
            <li key={h.messageId}>
              <button type="button" className="hit" onClick={() => openHit(h)}>
                <span className="hit-chat">
                  {h.chatTitle} · {h.role === 'user' ? 'question' : 'answer'}
                </span>
                <Snippet hit={h} />
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
