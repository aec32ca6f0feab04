// Browser uploads: documents.import takes a file's bytes base64-encoded.

export function bytesToBase64(bytes: Uint8Array): string {
  let out = '';
  const chunk = 0x8000; // String.fromCharCode takes a bounded number of arguments
  for (let i = 0; i < bytes.length; i += chunk) out += String.fromCharCode(...bytes.subarray(i, i + chunk));
  return btoa(out);
}

export async function fileToBase64(file: Blob): Promise<string> {
  return bytesToBase64(new Uint8Array(await file.arrayBuffer()));
}
