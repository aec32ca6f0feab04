// Copying text for the user. The async Clipboard API needs a secure context (https, localhost or the
// desktop's app:// scheme); a page served over plain http on the LAN lacks it, so fall back to the old
// select-and-execCommand route there. The caller tells the user what happened.

/** Copies text to the clipboard; resolves false when neither route is available. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement('textarea');
    area.value = text;
    document.body.appendChild(area);
    area.select();
    const copied = document.execCommand?.('copy') ?? false;
    area.remove();
    return copied;
  }
}
