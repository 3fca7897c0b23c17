/** RFC 9110 If-None-Match: a list of tags, or `*`; weak tags compare by their opaque part. */
export function ifNoneMatchMatches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  if (ifNoneMatch.trim() === '*') return true;
  return ifNoneMatch.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
