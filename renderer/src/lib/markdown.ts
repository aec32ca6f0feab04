// Answers are Markdown: parsed with marked, then sanitised with DOMPurify before they reach the DOM.
// Links open outside the app (target=_blank, no opener); scripts, event handlers, iframes, forms and
// styles never survive. What comes out is typed SafeHtml, the only thing components/SanitizedHtml.tsx
// (the one place HTML is put into the DOM) accepts.
import DOMPurify from 'dompurify';
import { Marked } from 'marked';

const marked = new Marked({ gfm: true, breaks: true, async: false });

let hooked = false;
function purifier() {
  if (!hooked) {
    DOMPurify.addHook('afterSanitizeAttributes', (node) => {
      if (node.tagName === 'A') {
        node.setAttribute('target', '_blank');
        node.setAttribute('rel', 'noopener noreferrer');
      }
    });
    hooked = true;
  }
  return DOMPurify;
}

/** HTML that went through sanitizeHtml: a string no other code can produce without a cast. */
export type SafeHtml = string & { readonly __brand: 'SafeHtml' };

/** Sanitises HTML for insertion into the page (the rules above). */
export function sanitizeHtml(html: string): SafeHtml {
  return purifier().sanitize(html, {
    USE_PROFILES: { html: true },
    FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe', 'object', 'embed'],
    FORBID_ATTR: ['style'],
  }) as string as SafeHtml;
}

export function renderMarkdown(text: string): SafeHtml {
  return sanitizeHtml(marked.parse(text) as string);
}
