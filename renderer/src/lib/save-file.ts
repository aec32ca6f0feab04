// Saves text the app made (a chat's export) as a file: a download of a blob: URL, which a browser saves
// in its downloads and the desktop app asks where to save (electron/shell/security.ts lets only the page's
// own blobs download).
export function saveTextFile(fileName: string, mimeType: string, text: string, doc: Document = document): void {
  const url = URL.createObjectURL(new Blob([text], { type: `${mimeType};charset=utf-8` }));
  const a = doc.createElement('a');
  a.href = url;
  a.download = fileName;
  a.rel = 'noopener';
  a.style.display = 'none';
  doc.body.appendChild(a);
  try {
    a.click();
  } finally {
    a.remove();
    // Revoked once the download has started from it.
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  }
}
