import { act, fireEvent, render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';

import { VirtualList } from './VirtualList.tsx';

const keys = Array.from({ length: 1000 }, (_, i) => `m${i}`);

describe('the virtualised message list', () => {
  it('puts only the messages near the viewport in the DOM, out of 1,000', () => {
    render(
      <VirtualList keys={keys} label="Conversation" estimate={100} overscan={200} renderItem={(k) => <p>{k}</p>} />,
    );
    const list = screen.getByRole('log', { name: 'Conversation' });
    const rendered = list.querySelectorAll('.vlist-item');
    expect(rendered.length).toBeGreaterThan(5);
    expect(rendered.length).toBeLessThan(40);
    // The full height is kept so the scrollbar is right.
    expect((list.firstElementChild as HTMLElement).style.height).toBe('100000px');
  });

  it('renders other messages when scrolled', () => {
    render(<VirtualList keys={keys} label="Conversation" estimate={100} overscan={0} renderItem={(k) => <p>{k}</p>} />);
    const list = screen.getByRole('log');
    act(() => {
      list.scrollTop = 50_000;
      fireEvent.scroll(list);
    });
    expect(screen.queryByText('m0')).toBeNull();
    expect(screen.getByText('m500')).toBeTruthy();
    const window = list.querySelector('.vlist-window') as HTMLElement;
    expect(window.style.transform).toBe('translateY(50000px)');
  });

  it('starts at the bottom and follows it as messages are added', () => {
    const more = [...keys, 'm1000'];
    const list = (k: readonly string[]) => (
      <VirtualList keys={k} label="Conversation" estimate={100} overscan={0} renderItem={(key) => <p>{key}</p>} />
    );
    const { rerender } = render(list(keys));
    const log = screen.getByRole('log');
    // jsdom lays nothing out: the viewport is the list's default 800 px, the content 100 px a message.
    expect(log.scrollTop).toBe(100_000 - 800);
    rerender(list(more));
    expect(log.scrollTop).toBe(100_100 - 800);
    act(() => {
      fireEvent.scroll(log);
    });
    expect(screen.getByText('m1000')).toBeTruthy();
    expect(screen.queryByText('m0')).toBeNull();
  });

  it('brings an item to the top of the view when asked (a search hit), once it is among the keys', () => {
    const list = (k: readonly string[], to: string | null) => (
      <VirtualList
        keys={k}
        label="Conversation"
        estimate={100}
        overscan={0}
        scrollToKey={to}
        renderItem={(key) => <p>{key}</p>}
      />
    );
    const { rerender } = render(list(['m0'], 'm250'));
    const log = screen.getByRole('log');
    expect(log.scrollTop).toBe(0);
    rerender(list(keys, 'm250'));
    expect(log.scrollTop).toBe(25_000);
    expect(screen.getByText('m250')).toBeTruthy();
    expect(screen.queryByText('m999')).toBeNull();
    // Items added later do not pull the view to the bottom: the user is reading the hit.
    rerender(list([...keys, 'm1000'], 'm250'));
    expect(log.scrollTop).toBe(25_000);
  });

  it('shows new items as they are added', () => {
    const { rerender } = render(<VirtualList keys={['a']} label="Conversation" renderItem={(k) => <p>{k}</p>} />);
    rerender(<VirtualList keys={['a', 'b']} label="Conversation" renderItem={(k) => <p>{k}</p>} />);
    expect(screen.getByText('b')).toBeTruthy();
  });
});
