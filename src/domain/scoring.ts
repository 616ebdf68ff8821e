/**
 * The spec's score: round((correct_answers / total_questions) * 100), for a
 * completed session only; `null` while in progress.
 *
 * Computed as `correct * 100 / total` so that exact halves (1 of 8 = 12.5)
 * are not nudged below .5 by binary fractions before rounding half up.
 */
export function scorePercentage(
  correctAnswers: number,
  totalQuestions: number,
  completedAt: Date | null,
): number | null {
  if (completedAt === null) return null;
  if (totalQuestions <= 0) return 0;
  return Math.round((correctAnswers * 100) / totalQuestions);
}

/**
 * Whether a user's answer matches the question's correct answer: compared
 * with surrounding white space trimmed, case-insensitively, after Unicode NFC
 * normalisation (so "é" typed as e + accent matches "é").
 */
export function isCorrectAnswer(userAnswer: string, correctAnswer: string): boolean {
  return normalize(userAnswer) === normalize(correctAnswer);
}

function normalize(text: string): string {
  return text.normalize("NFC").trim().toLowerCase();
}
