// A name edited in place (a document's title): Enter saves, Escape or leaving the box cancels. The cursor
// goes into the box when it opens.
import { useEffect, useRef, useState } from 'react';

export function RenameForm({
  id,
  label,
  initial,
  onSave,
  onClose,
}: {
  id: string;
  label: string;
  initial: string;
  onSave: (name: string) => void;
  onClose: () => void;
}) {
  const [draft, setDraft] = useState(initial);
  const box = useRef<HTMLInputElement>(null);
  useEffect(() => {
    box.current?.focus();
    box.current?.select();
  }, []);
  return (
    <form
      className="rename"
      onSubmit={(e) => {
        e.preventDefault();
        const name = draft.replace(/\s+/g, ' ').trim();
        if (name && name !== initial) onSave(name);
        onClose();
      }}
    >
      <label className="sr-only" htmlFor={id}>
        {label}
      </label>
      <input
        id={id}
        ref={box}
        type="text"
        value={draft}
        onChange={(e) => setDraft(e.target.value)}
        onBlur={onClose}
        onKeyDown={(e) => {
          if (e.key === 'Escape') {
            e.stopPropagation();
            onClose();
          }
        }}
        maxLength={200}
      />
    </form>
  );
}
