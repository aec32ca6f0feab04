// The one place the renderer puts HTML into the DOM. It takes SafeHtml, which only lib/markdown.ts's
// sanitizeHtml (DOMPurify: no scripts, event handlers, iframes, forms or styles) produces, so unsanitised
// HTML does not type-check here. Every other component renders through React's escaping.
import type { SafeHtml } from '../lib/markdown.ts';

export function SanitizedHtml({ html, className }: { html: SafeHtml; className?: string }) {
  // biome-ignore lint/security/noDangerouslySetInnerHtml: html is SafeHtml, DOMPurify's output (lib/markdown.ts sanitizeHtml); nothing else type-checks as SafeHtml.
  return <div className={className} dangerouslySetInnerHTML={{ __html: html }} />;
}
