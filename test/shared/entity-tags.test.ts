import { ifNoneMatchMatches } from '../../services/shared/entity-tags';

const TAG = '"Mxg-LajHYtsjnKLo_CXzSSpdu-s"';

describe('If-None-Match against an answer’s ETag (RFC 9110 13.1.2)', () => {
  test('the tag sent back as given matches', () => {
    expect(ifNoneMatchMatches(TAG, TAG)).toBe(true);
  });

  test('a list naming the tag matches, with spaces, and weak tags compare by their opaque part', () => {
    expect(ifNoneMatchMatches(`"other", ${TAG}`, TAG)).toBe(true);
    expect(ifNoneMatchMatches(` W/${TAG} `, TAG)).toBe(true);
    expect(ifNoneMatchMatches('*', TAG)).toBe(true);
  });

  test('another tag, a tag without quotes, or none does not match', () => {
    expect(ifNoneMatchMatches('"other"', TAG)).toBe(false);
    expect(ifNoneMatchMatches(TAG.slice(1, -1), TAG)).toBe(false);
    expect(ifNoneMatchMatches(`${TAG}x`, TAG)).toBe(false);
    expect(ifNoneMatchMatches(undefined, TAG)).toBe(false);
  });
});
