// Light and dark themes: Settings.theme is system, light or dark; "system" follows the operating system's
// preference as it changes. The resolved theme is set on <html data-theme> for the CSS.
import { useEffect, useSyncExternalStore } from 'react';

import { useSettings } from '../stores/settings.ts';

const query = '(prefers-color-scheme: dark)';

function subscribe(cb: () => void) {
  if (typeof window === 'undefined' || !window.matchMedia) return () => {};
  const mq = window.matchMedia(query);
  mq.addEventListener?.('change', cb);
  return () => mq.removeEventListener?.('change', cb);
}

function systemDark(): boolean {
  return typeof window !== 'undefined' && !!window.matchMedia && window.matchMedia(query).matches;
}

export function useResolvedTheme(): 'light' | 'dark' {
  const pref = useSettings((s) => s.settings?.theme ?? 'system');
  const dark = useSyncExternalStore(subscribe, systemDark, () => false);
  return pref === 'system' ? (dark ? 'dark' : 'light') : pref;
}

/** Keeps <html data-theme> in step with the settings and the system. */
export function useThemeEffect(): void {
  const theme = useResolvedTheme();
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
    document.documentElement.style.colorScheme = theme;
  }, [theme]);
}
