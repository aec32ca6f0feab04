// Modal dialogs (the delete confirmation, the shortcut help): focus moves in, Tab stays inside, Escape or a
// click outside closes, and focus returns to where it was.
import { useEffect, useRef, type ReactNode } from 'react';

import { closeConfirm, setHelp, useUi } from '../stores/ui.ts';
import { api, hasApi } from '../api/client.ts';
import { keyLabel, SHORTCUTS } from '../lib/shortcuts.ts';

export function Modal({
  title,
  onClose,
  children,
  labelledBy,
  className,
}: {
  title: string;
  onClose: () => void;
  children: ReactNode;
  labelledBy?: string;
  className?: string;
}) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const before = document.activeElement as HTMLElement | null;
    const first = ref.current?.querySelector<HTMLElement>('[data-autofocus], button, [href], input, textarea, select');
    first?.focus();
    return () => before?.focus?.();
  }, []);
  const onKeyDown = (e: React.KeyboardEvent) => {
    if (e.key === 'Escape') {
      e.stopPropagation();
      onClose();
      return;
    }
    if (e.key !== 'Tab' || !ref.current) return;
    const items = [
      ...ref.current.querySelectorAll<HTMLElement>(
        'button:not([disabled]), [href], input, textarea, select, [tabindex="0"]',
      ),
    ];
    if (!items.length) return;
    const first = items[0],
      last = items[items.length - 1];
    if (e.shiftKey && document.activeElement === first) {
      e.preventDefault();
      last.focus();
    } else if (!e.shiftKey && document.activeElement === last) {
      e.preventDefault();
      first.focus();
    }
  };
  // A click outside the dialog closes it: the backdrop holds a full-size button under the dialog for that,
  // out of the tab order and hidden from assistive technology (Escape and the dialog's own buttons close it
  // from the keyboard). A press that starts in the dialog and ends outside is no click on it.
  return (
    <div className="backdrop">
      <button type="button" className="backdrop-close" tabIndex={-1} aria-hidden="true" onClick={onClose} />
      <div
        ref={ref}
        className={`modal ${className ?? ''}`}
        role="dialog"
        aria-modal="true"
        aria-label={labelledBy ? undefined : title}
        aria-labelledby={labelledBy}
        onKeyDown={onKeyDown}
      >
        {children}
      </div>
    </div>
  );
}

export function ConfirmDialog() {
  const req = useUi((s) => s.confirm);
  if (!req) return null;
  return (
    <Modal title={req.title} onClose={closeConfirm} labelledBy="confirm-title">
      <h2 id="confirm-title">{req.title}</h2>
      <p>{req.body}</p>
      <div className="modal-actions">
        <button type="button" className="button" onClick={closeConfirm} data-autofocus>
          Keep it
        </button>
        <button
          type="button"
          className={`button ${req.danger ? 'danger' : 'primary'}`}
          onClick={() => {
            closeConfirm();
            req.onConfirm();
          }}
        >
          {req.confirmLabel}
        </button>
      </div>
    </Modal>
  );
}

export function HelpOverlay() {
  const open = useUi((s) => s.helpOpen);
  if (!open) return null;
  const desktop = hasApi() && !!api().shell;
  return (
    <Modal title="Keyboard shortcuts" onClose={() => setHelp(false)} labelledBy="help-title" className="help">
      <h2 id="help-title">Keyboard shortcuts</h2>
      <table className="shortcut-table">
        <tbody>
          {SHORTCUTS.filter((s) => s.keys.length || desktop).map((s) => (
            <tr key={s.action}>
              <td>
                {[...(desktop ? (s.desktopKeys ?? []) : []), ...s.keys].map((combo, j) => (
                  <span key={j} className="combo">
                    {j > 0 && <span className="muted"> or </span>}
                    {combo.map((k, i) => (
                      <span key={i}>
                        {i > 0 && ' + '}
                        <kbd>{keyLabel(k)}</kbd>
                      </span>
                    ))}
                  </span>
                ))}
              </td>
              <td>{s.label}</td>
            </tr>
          ))}
          <tr>
            <td>
              <kbd>Enter</kbd> / <kbd>Shift</kbd> + <kbd>Enter</kbd>
            </td>
            <td>Send the question / new line</td>
          </tr>
          <tr>
            <td>
              <kbd>Tab</kbd>, arrows
            </td>
            <td>Move between controls; arrows move across tabs, options and heatmap cells (Enter locks a head)</td>
          </tr>
        </tbody>
      </table>
      <div className="modal-actions">
        <button type="button" className="button primary" onClick={() => setHelp(false)}>
          Close
        </button>
      </div>
    </Modal>
  );
}
