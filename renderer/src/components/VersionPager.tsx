// "‹ 2/3 ›" on an answer that was regenerated, or a question that was edited: browse its versions (a
// question's each with the conversation that followed it); the conversation goes on from the one shown.
import type { Message } from '../../../electron/api/contract.ts';
import { selectVersion } from '../stores/chats.ts';

export function VersionPager({ m, disabled }: { m: Message; disabled: boolean }) {
  const { index, count } = m.version;
  if (count < 2) return null;
  const go = (v: number) => void selectVersion(m.chatId, m.id, v);
  return (
    <fieldset className="version-pager" aria-label={`Versions of this ${m.role === 'user' ? 'question' : 'answer'}`}>
      <button
        type="button"
        className="link-button"
        aria-label="Earlier version"
        disabled={disabled || index <= 1}
        onClick={() => go(index - 1)}
      >
        ‹
      </button>
      <span aria-live="polite">
        {index}/{count}
      </span>
      <button
        type="button"
        className="link-button"
        aria-label="Later version"
        disabled={disabled || index >= count}
        onClick={() => go(index + 1)}
      >
        ›
      </button>
    </fieldset>
  );
}
