import type { DescField } from "@bufbuild/protobuf";

/**
 * The message for a body field the operation does not have, naming the field the caller most
 * likely meant: the same letters in another case or with other separators (`questionId`,
 * `user-answer`), or one or two letters off (`qestion_id`).
 */
export function unknownFieldMessage(name: string, fields: ReadonlyMap<string, DescField>): string {
  const meant = likelyMeant(name, [...fields.keys()]);
  return meant === undefined
    ? `unknown field ${name}`
    : `unknown field ${name}: did you mean ${meant}?`;
}

function likelyMeant(name: string, candidates: string[]): string | undefined {
  const bare = (s: string) => s.toLowerCase().replace(/[-_\s]/g, "");
  const same = candidates.find((c) => bare(c) === bare(name));
  if (same !== undefined) return same;
  let best: { name: string; distance: number } | undefined;
  for (const c of candidates) {
    const distance = editDistance(bare(name), bare(c));
    if (distance <= 2 && (best === undefined || distance < best.distance))
      best = { name: c, distance };
  }
  return best?.name;
}

/** Levenshtein distance: insertions, deletions and substitutions. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + cost,
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
