/**
 * A quiz's content as a person practising it sees it: never a correct answer.
 */

export interface QuizQuestion {
  /** The question_id to answer with. */
  id: string;
  /** 1-based order in the quiz: (position, id) order, as a snapshot numbers them. */
  position: number;
  prompt: string;
}

export interface Quiz {
  id: string;
  studyGuideId: string;
  title: string;
  /** By position. */
  questions: QuizQuestion[];
}
