/**
 * Parses an import file: a JSON array of tool records, the JSON export's `{data, meta}`
 * envelope (so an export is its own rollback file), or NDJSON (one record a line).
 */
export function parseImport(text: string): unknown[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) return JSON.parse(trimmed) as unknown[];
  if (trimmed.startsWith('{')) {
    try {
      const whole = JSON.parse(trimmed) as { data?: unknown };
      if (Array.isArray(whole.data)) return whole.data;
    } catch {
      // Not one JSON document: NDJSON, below.
    }
  }
  return trimmed
    .split('\n')
    .map((line, index) => ({ line: line.trim(), number: index + 1 }))
    .filter(({ line }) => line !== '')
    .map(({ line, number }) => {
      try {
        return JSON.parse(line) as unknown;
      } catch (err) {
        throw new Error(`line ${number} is not JSON: ${(err as Error).message}`, { cause: err });
      }
    });
}
