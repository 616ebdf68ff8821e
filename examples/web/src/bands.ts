/** A score's band, in words as well as in colour: < 50% low, < 80% fair, else good. */
export function scoreBand(score: number): { name: "low" | "fair" | "good"; label: string } {
  if (score < 50) return { name: "low", label: "low" };
  if (score < 80) return { name: "fair", label: "fair" };
  return { name: "good", label: "good" };
}
