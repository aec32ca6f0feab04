// The file extensions Folio imports, for the desktop's open dialog and file associations and the web's file
// picker (what a file holds decides how it is read: electron/documents/detect.ts). No imports: the renderer
// imports it too.
export const DOCUMENT_EXTENSIONS = ['pdf', 'docx', 'md', 'markdown', 'txt', 'png', 'jpg', 'jpeg'] as const;
