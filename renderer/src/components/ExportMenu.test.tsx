import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { describe, expect, it } from 'vitest';

import { ExportMenu } from './ExportMenu.tsx';

/** The Export button laid out at `left` (jsdom lays nothing out), 64 px wide, in a 1024 px window. */
function openAt(left: number) {
  render(<ExportMenu chatId="c1" />);
  const button = screen.getByRole('button', { name: 'Export' });
  button.getBoundingClientRect = () => new DOMRect(left, 200, 64, 30);
  return userEvent.click(button);
}

describe('the export menu', () => {
  it('opens fixed to the window beside its button, towards the middle: no pane clips it', async () => {
    expect(window.innerWidth).toBe(1024);
    // The chat bar wrapped and put the button at the pane's left edge: the menu opens rightwards from it.
    await openAt(210);
    const menu = screen.getByTestId('export-options');
    expect([menu.style.top, menu.style.left, menu.style.right]).toEqual(['234px', '210px', '']);
    expect(screen.getByRole('button', { name: 'Export' }).getAttribute('aria-expanded')).toBe('true');
  });

  it('opens leftwards from a button at the right', async () => {
    await openAt(940);
    const menu = screen.getByTestId('export-options');
    expect([menu.style.top, menu.style.left, menu.style.right]).toEqual(['234px', '', '20px']);
    await userEvent.click(screen.getByRole('button', { name: 'Export' }));
    expect(screen.queryByTestId('export-options')).toBeNull();
  });
});
