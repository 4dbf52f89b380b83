/** A contact's values for the template variables, as the server fills them (`name` is the first word). */
export function previewText(
  text: string,
  contact: { name: string; email: string | null; phone: string | null } | null,
  fallback: string,
): string {
  const full = contact?.name.trim().replace(/\s+/g, ' ') ?? ''
  const values: Record<string, string> = {
    name: full === '' ? fallback : full.split(' ')[0],
    full_name: full === '' ? fallback : full,
    email: contact?.email ?? '',
    phone: contact?.phone ?? '',
  }
  return text.replace(/\{\{\s*([a-z_]+)\s*\}\}/g, (whole, key: string) => values[key] ?? whole)
}
